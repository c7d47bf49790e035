package systemdvm

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Release is a Debian release an image is built from.
type Release struct {
	Suite string // bookworm, trixie
	// Packages are what debootstrap --variant=minbase adds.
	Packages []string
	// OwnKernel boots the image with the kernel and initramfs its own
	// linux-image-amd64 installed; otherwise with the host's (/boot).
	OwnKernel bool
}

// basePackages are every image's: systemd as PID 1, the system and session
// buses, logind's PAM module (session scopes, the user manager), procps and
// python3 for the scenarios.
func basePackages() []string {
	return []string{
		"systemd", "systemd-sysv", "dbus", "udev", "procps", "python3", "iproute2", "kmod",
		"libpam-systemd", "dbus-user-session",
	}
}

// Bookworm is Debian 12 on the host's kernel (Debian's 6.1 on CI).
func Bookworm() Release { return Release{Suite: "bookworm", Packages: basePackages()} }

// Trixie is Debian 13 on its own kernel (6.12: Landlock network rules and
// scopes) with Podman, rootful and rootless (uidmap's newuidmap).
func Trixie() Release {
	return Release{
		Suite:     "trixie",
		Packages:  append(basePackages(), "linux-image-amd64", "initramfs-tools", "podman", "uidmap"),
		OwnKernel: true,
	}
}

// DefaultCacheRoot is where images are cached; OCTOSTORE_SYSTEMD_VM_CACHE
// overrides it.
const DefaultCacheRoot = "/var/cache/octostore-systemd-vm"

//go:embed image
var imageFiles embed.FS

// Image is a cached root disk with the kernel and initramfs it boots with.
type Image struct {
	Dir    string // the cache directory, <cache root>/<key>
	Disk   string // root file system (ext4, raw); opened with snapshot=on only
	Kernel string
	Initrd string
	Built  bool          // built by this call (else reused)
	Took   time.Duration // how long the build took, when Built
}

// CacheRoot returns the cache root in use.
func CacheRoot() string {
	if d := os.Getenv("OCTOSTORE_SYSTEMD_VM_CACHE"); d != "" {
		return d
	}
	return DefaultCacheRoot
}

// EnsureImage returns this machine's cached image of rel, building it first
// when it is missing (a minute or two and 330-450 MB of downloads from apt's
// mirror). logf reports progress.
func EnsureImage(ctx context.Context, rel Release, logf func(string, ...any)) (*Image, error) {
	if err := CheckTools(); err != nil {
		return nil, err
	}
	var boot []string // the host's kernel and initramfs, when rel boots them
	if !rel.OwnKernel {
		kernel, initrd, err := hostKernel()
		if err != nil {
			return nil, err
		}
		boot = []string{kernel, initrd}
	}
	key, err := imageKey(rel, boot)
	if err != nil {
		return nil, err
	}
	root := CacheRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(filepath.Join(root, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	img := &Image{Dir: filepath.Join(root, key)}
	img.Disk, img.Kernel, img.Initrd = filepath.Join(img.Dir, "disk.img"), filepath.Join(img.Dir, "vmlinuz"), filepath.Join(img.Dir, "initrd.img")
	defer pruneUnused(root, key, logf)
	if _, err := os.Stat(img.Disk); err == nil {
		return img, touchUsed(img.Dir)
	}
	removeLeftovers(root, logf)
	start := time.Now()
	logf("systemdvm: building the VM image %s (debootstrap %s; a minute or two)", img.Dir, rel.Suite)
	if err := build(ctx, root, img.Dir, rel, boot); err != nil {
		return nil, err
	}
	img.Built, img.Took = true, time.Since(start)
	logf("systemdvm: image built in %s", img.Took.Round(time.Second))
	return img, touchUsed(img.Dir)
}

// unusedFor is how long an image no run has used stays in the cache.
const unusedFor = 14 * 24 * time.Hour

func touchUsed(dir string) error {
	return os.WriteFile(filepath.Join(dir, "last-used"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

// pruneUnused removes the cache's other images that no run used for
// unusedFor (a changed build script or kernel leaves the old one behind);
// called under the lock, so no build is writing them.
func pruneUnused(root, keep string, logf func(string, ...any)) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		st, err := os.Stat(filepath.Join(dir, "last-used"))
		if err != nil {
			st, err = os.Stat(dir)
		}
		if err == nil && time.Since(st.ModTime()) > unusedFor {
			logf("systemdvm: removing the image %s, unused since %s", dir, st.ModTime().Format(time.DateOnly))
			os.RemoveAll(dir)
		}
	}
}

// build runs image/build.sh for rel into final; boot is the host's kernel
// and initramfs to copy beside the disk, when rel does not bring its own.
func build(ctx context.Context, root, final string, rel Release, boot []string) error {
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	files := filepath.Join(tmp, "files")
	if err := extractImageFiles(files); err != nil {
		return err
	}
	src, err := mirror(rel.Suite)
	if err != nil {
		return err
	}
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "/bin/bash", filepath.Join(files, "build.sh"))
	cmd.Env = append(os.Environ(),
		"OUT="+out, "MIRROR="+src.URI, "SUITE="+rel.Suite, "FILES="+files,
		"PACKAGES="+strings.Join(rel.Packages, ","), "KEYRING="+src.Keyring,
		"OWN_KERNEL="+strconv.FormatBool(rel.OwnKernel),
		"PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin", "DEBIAN_FRONTEND=noninteractive")
	if p := aptProxy(); p != "" {
		cmd.Env = append(cmd.Env, "http_proxy="+p)
	}
	logFile := filepath.Join(root, "build.log")
	lf, err := os.Create(logFile)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	err = cmd.Run()
	lf.Close()
	if err != nil {
		return fmt.Errorf("building the VM image (mirror %s from apt's configuration) failed: %w; last lines of %s:\n%s",
			src.URI, err, logFile, Tail(logFile, 30))
	}
	kernel := "the image's own"
	if boot != nil {
		kernel = boot[0]
		for i, to := range []string{"vmlinuz", "initrd.img"} {
			if err := copyFile(boot[i], filepath.Join(out, to), 0o644); err != nil {
				return err
			}
		}
	}
	info := fmt.Sprintf("built %s from %s (%s), packages %s, kernel %s\n",
		time.Now().UTC().Format(time.RFC3339), src.URI, rel.Suite, strings.Join(rel.Packages, ","), kernel)
	if err := os.WriteFile(filepath.Join(out, "info.txt"), []byte(info), 0o644); err != nil {
		return err
	}
	return os.Rename(out, final)
}

// removeLeftovers removes temporary build directories of builds that were
// killed; called under the lock, so no build is using them.
func removeLeftovers(root string, logf func(string, ...any)) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			logf("systemdvm: removing %s, left by a build that did not finish", e.Name())
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// imageKey hashes everything the image is made from but the mirror: rel, the
// build files and the host's kernel and initramfs when it boots them.
func imageKey(rel Release, boot []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "suite %s\npackages %s\nown kernel %t\n", rel.Suite, strings.Join(rel.Packages, ","), rel.OwnKernel)
	var names []string
	err := fs.WalkDir(imageFiles, "image", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := imageFiles.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file %s %d\n", n, len(b))
		h.Write(b)
	}
	for _, f := range boot {
		fmt.Fprintf(h, "boot %s\n", filepath.Base(f))
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func extractImageFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := imageFiles.ReadDir("image")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := imageFiles.ReadFile("image/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Tail returns the last n lines of a file, for error messages.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var errNoKernel = errors.New("no kernel with an initramfs in /boot")
