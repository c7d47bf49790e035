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
	lerr := WithFd(f, func(fd int) error {
		for {
			if err := unix.Flock(fd, how|unix.LOCK_NB); !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	})
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return false, nil
	}
	return lerr == nil, lerr
}

func UnlockFile(f *os.File) error {
	return WithFd(f, func(fd int) error { return unix.Flock(fd, unix.LOCK_UN) })
}
