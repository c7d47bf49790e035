package local

import (
	"github.com/octostore-supervisor/supervisor/hold"

	"os"

	"golang.org/x/sys/unix"
)

// checkReliableLocks refuses a state directory on a file system the kernel
// does not mark MNT_LOCAL (NFS, SMB, AFP, WebDAV, …): there flock is not
// shared between the hosts that mount it, so two hosts could both lead.
func checkReliableLocks(d *os.File, dir string) error {
	raw, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var sfs unix.Statfs_t
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &sfs) }); err != nil {
		return err
	}
	if serr != nil {
		return stateDirErrorCause(serr, "could not inspect the file system of %s: %s", dir, hold.OSErrorText(serr))
	}
	if sfs.Flags&unix.MNT_LOCAL == 0 {
		return stateDirError("local state directory %s is on a network file system (%s) where file locks are not reliable; refusing it",
			dir, unix.ByteSliceToString(sfs.Fstypename[:]))
	}
	return nil
}
