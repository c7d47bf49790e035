//go:build linux || darwin

package local

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform"
)

// fstatfs describes the file system of the opened directory d (named dir in
// the refusal), for checkReliableLocks.
func fstatfs(d *os.File, dir string) (unix.Statfs_t, error) {
	var sfs unix.Statfs_t
	serr := platform.WithFd(d, func(fd int) error { return unix.Fstatfs(fd, &sfs) })
	if serr != nil {
		return sfs, stateDirErrorCause(serr, "could not inspect the file system of %s: %s", dir, hold.OSErrorText(serr))
	}
	return sfs, nil
}
