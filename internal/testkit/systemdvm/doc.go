// Package systemdvm boots a Debian VM (a Release: Debian 12 or 13) with
// systemd as PID 1 on a pure cgroup v2 hierarchy under qemu, runs one payload
// in it and hands back what the payload wrote. It is a test kit: tests use it to run the real binaries
// on a host as users have it (testbin/e2e/systemdhost); no product code
// imports it. Linux only, as root.
//
// # Image
//
// EnsureImage builds a release's root disk once per machine and caches it
// under /var/cache/octostore-systemd-vm/<key>/ (OCTOSTORE_SYSTEMD_VM_CACHE
// moves the cache root): a minbase debootstrap of the release with its
// Packages, built by image/build.sh, and the kernel and initramfs it boots
// with: the host's from /boot (Bookworm), or the image's own from its
// linux-image-amd64 (Trixie: kernel 6.12). Debian's initramfs has the virtio
// drivers. The key is the SHA-256 of the release, every file in image/ and,
// when it boots the host's, the kernel and initramfs bytes: change any of
// them and the next run builds a new image; nothing else invalidates it. The
// mirror is read from apt's own configuration (/etc/apt/sources.list,
// sources.list.d/*.list and *.sources), never written into the code, and is
// not part of the key; a release apt has no entry for (trixie on a bookworm
// host) is fetched from the host release's mirror.
//
// Invariants:
//   - A cache directory is complete or absent: the image is built in a
//     temporary directory beside it and renamed into place.
//   - Builds are serialised by an exclusive flock on <cache root>/.lock, so
//     concurrent test processes build once and the rest wait and reuse it;
//     temporary directories found under the lock are leftovers of a killed
//     build and are removed.
//   - The cached root disk is never written: qemu opens it with snapshot=on,
//     so every boot starts from the same state and boots may run at once.
//   - Each use stamps the image's last-used file; other images of the cache
//     unused for 14 days are removed (each is 350-800 MB on disk).
//
// The image has a normal user tester (uid 1000, home directory, lingering, so
// user@1000.service runs from boot, and subordinate ids 100000-165535 where
// uidmap is installed, for rootless Podman) and nobody; serial-getty@ttyS0 is masked
// (its login prompt would take the console); the journal is volatile.
//
// # Boot
//
// Image.Boot puts a payload directory on a second, small ext4 disk (mkfs.ext4
// -d, label octo-payload, no loop mount) and boots with it attached
// read-write. The image's oneshot unit octo-e2e.service (After=
// multi-user.target user@1000.service) mounts it at /mnt/payload, runs its
// run.sh as root as `run.sh /mnt/payload /mnt/payload/results` (stdout and
// stderr to results/run.out, the exit code to results/run.rc), syncs,
// unmounts and powers the VM off. After qemu exits, Boot copies results/ out
// of the payload disk with debugfs (rdump, no mount).
//
// Invariants:
//   - qemu's whole life is bounded: past the limit it is SIGKILLed by its pid
//     (and it dies with the test process: Pdeathsig, through
//     proctest.StartOwned), and Boot proves at the
//     end that no process of this boot's qemu remains.
//   - The console (ttyS0: the kernel, systemd and the payload's progress
//     lines) is kept in a file whose tail goes into every error.
//   - Missing tools (qemu-system-x86_64, debootstrap, mkfs.ext4, debugfs, a
//     kernel and initramfs in /boot) are an error naming the apt-get install
//     line that provides them (CheckTools); callers fail on it, never skip.
//
// KVM is not used: on the machines this project's CI runs on, /dev/kvm exists
// but qemu aborts (MSR 0x10a) or hangs with it. qemu runs with TCG (-accel
// tcg,thread=multi -cpu max -smp 2 -m 2048), which reaches multi-user in
// 15-30 s.
package systemdvm
