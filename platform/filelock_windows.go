package platform

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset puts the locked byte far beyond any content: LockFileEx locks
// are mandatory, and a lock on real bytes would make other processes' reads
// of those bytes fail.
const lockOffset = 1 << 62

func lockOverlapped() *windows.Overlapped {
	return &windows.Overlapped{Offset: uint32(lockOffset & 0xFFFFFFFF), OffsetHigh: uint32(lockOffset >> 32)}
}

// TryLockFile takes LockFileEx (exclusive or shared) on one byte without
// waiting; the kernel drops it when the holder's handle closes or the holder
// dies.
func TryLockFile(f *os.File, exclusive bool) (bool, error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, lockOverlapped())
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return false, nil
	}
	return err == nil, err
}

func UnlockFile(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockOverlapped())
}
