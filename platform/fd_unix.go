//go:build unix

package platform

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cloexecListed marks every descriptor from first up that dir (the process's
// own descriptor directory) lists close-on-exec. The directory's own
// descriptor is among them, which does no harm.
func cloexecListed(dir string, first int) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < first {
			continue
		}
		unix.CloseOnExec(fd)
	}
	return nil
}

// WithFd runs op on f's descriptor and returns op's error. It goes through
// SyscallConn rather than f.Fd(): Fd takes a pollable file out of the runtime's
// poller and makes it blocking for good, and a reader of it would then hold an
// OS thread in read(2).
func WithFd(f *os.File, op func(fd int) error) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := raw.Control(func(fd uintptr) { opErr = op(int(fd)) }); err != nil {
		return err
	}
	return opErr
}
