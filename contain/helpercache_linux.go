package contain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/helperimage"
	"github.com/octostore-supervisor/supervisor/platform"
)

// HelperCacheDir is where a root supervisor keeps the lean helper images it
// starts its guardian and shims from: one file per image, named by its SHA-256,
// written by the first supervisor that needs it and shared by every run after
// (so the pages of its code are too). Only root can write there; the
// directories are checked to be root's and writable by nobody else before a
// file in them is trusted, which is why the file's content is not hashed again
// at every start. Images of older versions stay until the next boot empties
// /run: about 13.5 MB a version (the helper image, 4.7 MB, and the hold
// image, 8.8 MB), in memory where /run is a tmpfs. Nothing prunes them: a
// supervisor cannot tell an old version's copies from those of another
// version still installed beside it, and two such versions would each
// remove and rewrite the other's.
const HelperCacheDir = "/run/octostore-supervisor/helpers"

// HelperCacheFallbackDir is the cache where /run does not let programs
// execute, as systemd hosts mount it (noexec). /var/lib is the system's own
// persistent state, executable on ordinary installs; copies there outlive a
// reboot, so a version's copies stay until removed by hand (any time: a run
// executes its image through a descriptor it opened, never by name).
const HelperCacheFallbackDir = "/var/lib/octostore-supervisor/helpers"

// helperCaches are the caches in the order they are tried (bundledImage).
func helperCaches() []string { return []string{HelperCacheDir, HelperCacheFallbackDir} }

// leanHelper opens the lean helper image bundled with this binary
// (bundledImage, from dirs). nil, nil: this binary
// carries no helper image (built without `make build`), and helpers start from
// the binary itself.
func leanHelper(dirs ...string) (*os.File, error) {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	defer self.Close()
	return leanFrom(self, dirs...)
}

// embeddedHoldImage is what the embedded hold starts from, given self, this
// binary, open, which it takes over: when light (the hold's authority needs
// no etcd client), the copy in HelperCacheDir of the hold image bundled with
// self, if there is one; else self. A copy that cannot be had is said on
// diag, and the hold starts from self: the same hold, with the etcd client's
// memory.
func embeddedHoldImage(self *os.File, light bool, diag io.Writer) *os.File {
	if !light {
		return self
	}
	f, err := holdImageFrom(self, helperCaches()...)
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: the embedded hold starts from this binary, not the bundled hold image: %v\n", err)
	}
	if f == nil {
		return self
	}
	self.Close()
	return f
}

// holdImageFrom opens the hold image bundled with self (bundledImage, from
// dirs); nil, nil: self carries none.
func holdImageFrom(self *os.File, dirs ...string) (*os.File, error) {
	img, ok, err := helperimage.FindHold(self)
	if err != nil || !ok {
		return nil, err
	}
	return bundledImage(self, img, dirs)
}

// leanFrom is leanHelper with this binary already open as self.
func leanFrom(self *os.File, dirs ...string) (*os.File, error) {
	img, ok, err := helperimage.FindFile(self)
	if err != nil || !ok {
		return nil, err
	}
	return bundledImage(self, img, dirs)
}

// bundledImage opens img, an image bundled with bin, from its copy in the
// first of dirs whose file system lets programs execute, writing the copy
// there first if there is none. Where none does, it is a sealed memfd copy
// of its own (sealedCopy): the same code, executable whatever is mounted
// noexec, at the price of the image's size in memory for each run rather
// than once for all of them. The file's name says which it is.
func bundledImage(bin io.ReaderAt, img helperimage.Image, dirs []string) (*os.File, error) {
	var refused []string
	for _, dir := range dirs {
		if err := executableDir(dir); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		return cachedImage(bin, img, dir)
	}
	name := "a sealed memfd copy (no cache directory lets programs execute: " + strings.Join(refused, "; ") + ")"
	return sealedCopy(name, io.NewSectionReader(bin, img.Offset, img.Size), &img.Sum)
}

// executableDir creates dir as rootOnlyDirs does, where the file system it is
// on lets programs execute (checked before anything is created there, and
// again on dir itself, which may be a mount of its own).
func executableDir(dir string) error {
	base := filepath.Dir(filepath.Dir(dir))
	if err := platform.Executable(base); err != nil {
		return err
	}
	if err := rootOnlyDirs(dir); err != nil {
		return err
	}
	return platform.Executable(dir)
}

// cachedImage opens the copy in dir of img, the helper image bundled with
// bin, writing the copy first if there is none.
func cachedImage(bin io.ReaderAt, img helperimage.Image, dir string) (*os.File, error) {
	if err := rootOnlyDirs(dir); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, sumName(img))
	f, err := openCached(name, img.Size)
	if errors.Is(err, fs.ErrNotExist) {
		if err := writeCached(name, io.NewSectionReader(bin, img.Offset, img.Size), img.Sum); err != nil {
			return nil, err
		}
		f, err = openCached(name, img.Size)
	}
	return f, err
}

// sumName is the name of an image's copy: its SHA-256 in hex.
func sumName(img helperimage.Image) string { return hex.EncodeToString(img.Sum[:]) }

// rootOnlyDirs creates dir and its parent if missing (mode 0700; their own
// parent, /run, must exist: it is the system's, not ours to make) and checks
// that both are directories of root's that nobody else may write to: a file
// there was put there by root.
func rootOnlyDirs(dir string) error {
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return fmt.Errorf("lstat %s: %w", d, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
			return fmt.Errorf("%s must be a directory of root's that only root may write to (mode %#o, owner %d); remove it", d, st.Mode&0o7777, st.Uid)
		}
	}
	return nil
}

// openCached opens a cached image read-only and checks it is root's, written
// by nobody, and whole.
func openCached(name string, size int64) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("fstat %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o222 != 0 || st.Size != size {
		f.Close()
		return nil, fmt.Errorf("%s is not the helper image this binary wrote (mode %#o, owner %d, %d bytes); remove it", name, st.Mode&0o7777, st.Uid, st.Size)
	}
	return f, nil
}

// writeCached copies the image beside name, checks its SHA-256 (a damaged
// binary is refused here, once), makes it durable and renames it into place.
// Supervisors starting at the same time may each write one: the renames
// replace identical files, and an image already opened stays what it was.
func writeCached(name string, img io.Reader, sum [sha256.Size]byte) (err error) {
	tmp := name + ".tmp-" + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp) // left by a supervisor that died writing it: its pid is ours now
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o500)
	if err != nil {
		return fmt.Errorf("write the helper image: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), img); err != nil {
		return fmt.Errorf("write the helper image %s: %w", tmp, err)
	}
	if [sha256.Size]byte(h.Sum(nil)) != sum {
		return errDamagedImage
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("install the helper image: %w", err)
	}
	return nil
}
