#!/bin/bash
# Builds the root disk of the systemd test VM (see ../doc.go). Run as root by
# the systemdvm package, which hashes this file, the package list and the
# files beside it into the cache key: change any of them and the next run
# builds a new image.
#
# Environment (all required):
#   OUT       directory to write disk.img into (a fresh temporary directory)
#   MIRROR    the Debian mirror URI, taken from the host's apt configuration
#   SUITE     the Debian suite (bookworm, trixie)
#   PACKAGES  comma-separated packages for debootstrap --include
#   FILES     directory holding octo-e2e.service and octo-e2e-boot
#   OWN_KERNEL  true: copy the image's own kernel and initramfs (from the
#             linux-image-amd64 in PACKAGES) to OUT/vmlinuz and OUT/initrd.img
# Optional: KEYRING (debootstrap --keyring), http_proxy (from apt's config).
set -euo pipefail
: "${OUT:?}" "${MIRROR:?}" "${SUITE:?}" "${PACKAGES:?}" "${FILES:?}" "${OWN_KERNEL:?}"

root="$OUT/rootfs"
keyring=()
[ -z "${KEYRING:-}" ] || keyring=(--keyring="$KEYRING")
debootstrap --variant=minbase "${keyring[@]}" --include="$PACKAGES" "$SUITE" "$root" "$MIRROR"

echo octo-vm >"$root/etc/hostname"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$root/etc/fstab"
# No network in the guest: the tests need none, and no unit waits for one.
rm -f "$root"/etc/resolv.conf

# A normal user with uid 1000 and a home: its user manager (user@1000.service)
# starts at boot because it lingers. nobody is kept for --worker-user.
chroot "$root" useradd --create-home --uid 1000 --user-group --shell /bin/bash tester
mkdir -p "$root/var/lib/systemd/linger"
touch "$root/var/lib/systemd/linger/tester"
chroot "$root" id nobody >/dev/null
# Subordinate ids for a rootless container engine (Podman), where one is
# installed: 65536 of each, as useradd gives a new user on a desktop.
if [ -x "$root/usr/bin/newuidmap" ]; then
  echo tester:100000:65536 >"$root/etc/subuid"
  echo tester:100000:65536 >"$root/etc/subgid"
fi

# The serial getty would take the console (vhangup) from the runner unit.
# apt's timers would start work nobody asked for in the middle of a run.
for u in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
  e2scrub_all.timer fstrim.timer; do
  ln -sf /dev/null "$root/etc/systemd/system/$u"
done

install -m 0644 "$FILES/octo-e2e.service" "$root/etc/systemd/system/octo-e2e.service"
install -m 0755 "$FILES/octo-e2e-boot" "$root/usr/local/sbin/octo-e2e-boot"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants" "$root/mnt/payload"
ln -sf /etc/systemd/system/octo-e2e.service "$root/etc/systemd/system/multi-user.target.wants/octo-e2e.service"
ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"

# The journal stays in memory: the root disk is a throw-away snapshot.
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/volatile.conf"

# debootstrap's package cache is not needed inside.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

if [ "$OWN_KERNEL" = true ]; then
  # the newest, should the release have pulled in more than one
  kernel=$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -n 1)
  [ -n "$kernel" ] || { echo "no kernel in the image's /boot: is linux-image-amd64 in PACKAGES?" >&2; exit 1; }
  initrd=$root/boot/initrd.img-${kernel##*/vmlinuz-}
  [ -f "$initrd" ] || { echo "no $initrd beside $kernel: is initramfs-tools in PACKAGES?" >&2; exit 1; }
  install -m 0644 "$kernel" "$OUT/vmlinuz"
  install -m 0644 "$initrd" "$OUT/initrd.img"
fi

truncate -s 3G "$OUT/disk.img"
mkfs.ext4 -q -F -L octo-root -d "$root" "$OUT/disk.img"
rm -rf "$root"
