//go:build linux

package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// A host lock is a name in the abstract unix-socket namespace, held by binding
// a socket to it. It backs a file lock where a same-user process could defeat
// the file: flock belongs to an inode, and a worker running as our user can
// unlink or replace the interlock file, after which the next supervisor locks a
// fresh inode and starts its worker beside a live one. An abstract name has no
// inode and no permissions to change: nobody can take it from the socket bound
// to it, and the kernel frees it only when the last descriptor of that socket
// closes, so it is held by a stopped process as firmly as by a running one, and
// shared with a child that inherits the socket (the guardian). The namespace
// is per network namespace: supervisors in different network namespaces are
// kept apart only by the file lock.

// OpenHostLock returns an unbound socket to take a host lock with (TryHostLock).
// Create it before handing it to another process, so the lock taken later is
// shared with that process.
func OpenHostLock() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("host lock socket: %w", err)
	}
	return os.NewFile(uintptr(fd), "host-lock"), nil
}

// TryHostLock binds s to the abstract name derived from key, without waiting;
// false means another socket holds it. Binding the same socket twice is an
// error, so callers remember that they hold it.
func TryHostLock(s *os.File, key string) (bool, error) {
	sum := sha256.Sum256([]byte(key))
	addr := &unix.SockaddrUnix{Name: "@octostore-supervisor/lock/" + hex.EncodeToString(sum[:])}
	berr := WithFd(s, func(fd int) error { return unix.Bind(fd, addr) })
	if errors.Is(berr, unix.EADDRINUSE) {
		return false, nil
	}
	if berr != nil {
		return false, fmt.Errorf("bind the host lock: %w", berr)
	}
	return true, nil
}
