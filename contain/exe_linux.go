package contain

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// selfExe names our own binary by the kernel's link, so a binary replaced on disk
// while we run cannot substitute a different guardian. In a helper started from
// helperImage it names that image.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// helperImage is the executable the supervisor starts its guardian from, and
// release frees it once the guardian runs.
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
// worker can do anything anyway.
func helperImage() (path string, release func(), err error) {
	if os.Geteuid() == 0 {
		return "/proc/self/exe", func() {}, nil
	}
	fd, err := unix.MemfdCreate("octostore-supervisor", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL { // kernels before 6.3 have no MFD_EXEC and allow exec anyway
		fd, err = unix.MemfdCreate("octostore-supervisor", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return "", nil, fmt.Errorf("create an execute-only copy of this program (memfd_create; vm.memfd_noexec must be 0 or 1): %w", err)
	}
	img := os.NewFile(uintptr(fd), "octostore-supervisor-image")
	defer img.Close()
	if err := fillImage(img); err != nil {
		return "", nil, fmt.Errorf("create an execute-only copy of this program: %w", err)
	}
	// The child resolves the path after it has moved its descriptors into
	// place (0..n, and up to n more while shuffling them; startHelper passes
	// fewer than 10), so the image must sit above all of them.
	high, err := unix.FcntlInt(img.Fd(), unix.F_DUPFD_CLOEXEC, imageFdMin)
	if err != nil {
		return "", nil, fmt.Errorf("move the program's copy above the helper's descriptors: %w", err)
	}
	return "/proc/self/fd/" + strconv.Itoa(high), func() { unix.Close(high) }, nil
}

// imageFdMin is the lowest descriptor number helperImage's copy may have.
const imageFdMin = 32

// fillImage copies our binary into img, makes it execute-only and seals it,
// so nothing can change what the helpers run from it.
func fillImage(img *os.File) error {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := io.Copy(img, src); err != nil {
		return err
	}
	if err := unix.Fchmod(int(img.Fd()), 0o111); err != nil {
		return fmt.Errorf("fchmod: %w", err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(img.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	return nil
}
