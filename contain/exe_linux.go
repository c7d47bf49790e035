package contain

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/helperimage"
)

// selfExe names our own binary by the kernel's link, so a binary replaced on disk
// while we run cannot substitute a different guardian. In a helper started from
// helperImage it names that image.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// helperImage is what the supervisor starts its guardian from, and through the
// guardian's /proc/self/exe the shims, the join helper and a PID namespace's
// init; release frees it once the guardian runs.
//
// As root it is the lean helper image bundled with this binary (leanHelper),
// and hold is what the guardian starts the embedded hold from (its
// HoldRootArg, spawnHoldRoot): the bundled hold image when hold.light, else
// this binary (embeddedHoldImage). Without a bundled image, or where its copy
// cannot be had (said on diag), it is this binary, as it is for everyone
// else:
//
// Every process is dumpable from its execve until its first
// prctl(PR_SET_DUMPABLE, 0), and in that window a same-user process (a worker)
// could ptrace it or copy its descriptors out with pidfd_getfd - the guardian's
// control socket, the hold's event channel. The kernel makes a process
// non-dumpable at execve itself when the caller may not read the executable
// (fs/exec.c would_dump), so for a non-root user the guardian is started from
// a sealed, execute-only memfd copy of this binary: the guardian, and what it
// starts through /proc/self/exe (shims, the join helper, the embedded hold),
// are non-dumpable from their first instruction, and the window does not exist.
// Root needs no copy (it may read anything, so it would not help): a process
// of another user can neither ptrace nor open root's processes, and a root
// worker can do anything anyway. (Nor does a non-root run use the lean image:
// the embedded hold would need a second memfd, a copy of this whole binary per
// run that no process's PSS shows.)
//
// hold.image is set when this process is the supervisor continued in the
// lean image (SuperviseLean): it is that image already, and hold.image is what
// the embedded hold starts from, chosen before the exec (handOver).
func helperImage(diag io.Writer, hold holdStart) (img helperImages, err error) {
	if hold.image != nil {
		return helperImages{guardian: "/proc/self/exe", hold: hold.image, release: func() { hold.image.Close() }}, nil
	}
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return img, fmt.Errorf("open this program: %w", err)
	}
	if os.Geteuid() == 0 {
		return rootImages(self, hold.light, diag)
	}
	defer self.Close()
	whole, err := withoutBundle(self)
	if err != nil {
		return img, fmt.Errorf("create an execute-only copy of this program: %w", err)
	}
	copyImg, err := sealedCopy("octostore-supervisor-image", whole, nil)
	if err != nil {
		return img, fmt.Errorf("create an execute-only copy of this program: %w", err)
	}
	defer copyImg.Close()
	img.guardian, img.release, err = highPath(copyImg)
	return img, err
}

// rootImages: the lean helper for the guardian where there is one, and for
// the hold its image or self (this binary, opened before anything else, so
// the embedded hold runs this very binary even if the file is replaced
// meanwhile): embeddedHoldImage. It takes self over: kept as hold, or closed.
func rootImages(self *os.File, light bool, diag io.Writer) (helperImages, error) {
	whole := helperImages{guardian: "/proc/self/exe", release: func() {}}
	lean, err := leanFrom(self, helperCaches()...)
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: helpers start from this binary, not the lean helper image: %v\n", err)
	}
	if lean == nil {
		self.Close()
		return whole, nil
	}
	defer lean.Close()
	path, release, err := highPath(lean)
	if err != nil {
		self.Close()
		return whole, err
	}
	hold := embeddedHoldImage(self, light, diag)
	return helperImages{guardian: path, hold: hold, release: func() { release(); hold.Close() }}, nil
}

// withoutBundle is our binary without the helper images bundled with it:
// nothing that starts from a copy of it runs them, and the copy is memory of
// its own.
func withoutBundle(self *os.File) (io.Reader, error) {
	bundle, ok, err := helperimage.FindFile(self)
	if err != nil {
		return nil, err
	}
	if !ok {
		return self, nil
	}
	// A LimitedReader keeps io.Copy on copy_file_range (os.File.ReadFrom).
	return io.LimitReader(self, bundle.Offset), nil
}

// errDamagedImage: a bundled image's bytes do not match its SHA-256.
var errDamagedImage = errors.New("the helper image bundled with this binary is damaged (its SHA-256 differs from its trailer's); reinstall octostore-supervisor")

// sealedCopy copies src into a new memfd, checks its SHA-256 against sum
// where one is given, makes it execute-only and seals it, so nothing can
// change what is started from it. name is the file's, for messages.
func sealedCopy(name string, src io.Reader, sum *[sha256.Size]byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("octostore-supervisor", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL { // kernels before 6.3 have no MFD_EXEC and allow exec anyway
		fd, err = unix.MemfdCreate("octostore-supervisor", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create (vm.memfd_noexec must be 0 or 1): %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := fillSealed(f, src, sum); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func fillSealed(f *os.File, src io.Reader, sum *[sha256.Size]byte) error {
	h := sha256.New()
	w := io.Writer(f)
	if sum != nil {
		w = io.MultiWriter(f, h)
	}
	if _, err := io.Copy(w, src); err != nil {
		return err
	}
	if sum != nil && [sha256.Size]byte(h.Sum(nil)) != *sum {
		return errDamagedImage
	}
	if err := unix.Fchmod(int(f.Fd()), 0o111); err != nil {
		return fmt.Errorf("fchmod: %w", err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	return nil
}
