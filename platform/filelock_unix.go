//go:build unix

package platform

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// TryLockFile takes flock(LOCK_EX or LOCK_SH) without waiting; false means
// another open file description holds a conflicting lock. flock locks belong
// to the open file, not the process, so two holds in one process exclude each
// other just as two processes do, and the kernel drops the lock when the
// holder dies.
func TryLockFile(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) {
		for {
			if lerr = unix.Flock(int(fd), how|unix.LOCK_NB); !errors.Is(lerr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return false, nil
	}
	return lerr == nil, lerr
}

func UnlockFile(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_UN) }); err != nil {
		return err
	}
	return lerr
}
