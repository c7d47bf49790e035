//go:build linux || darwin

package local

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/hold"
)

// fstatfs describes the file system of the opened directory d (named dir in
// the refusal), for checkReliableLocks.
func fstatfs(d *os.File, dir string) (unix.Statfs_t, error) {
	var sfs unix.Statfs_t
	raw, err := d.SyscallConn()
	if err != nil {
		return sfs, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &sfs) }); err != nil {
		return sfs, err
	}
	if serr != nil {
		return sfs, stateDirErrorCause(serr, "could not inspect the file system of %s: %s", dir, hold.OSErrorText(serr))
	}
	return sfs, nil
}
