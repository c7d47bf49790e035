package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// checkReliableLocks refuses a state directory on a file system the kernel
// does not mark MNT_LOCAL (NFS, SMB, AFP, WebDAV, …): there flock is not
// shared between the hosts that mount it, so two hosts could both lead.
func checkReliableLocks(d *os.File, dir string) error {
	sfs, err := fstatfs(d, dir)
	if err != nil {
		return err
	}
	if sfs.Flags&unix.MNT_LOCAL == 0 {
		return stateDirError("local state directory %s is on a network file system (%s) where file locks are not reliable; refusing it",
			dir, unix.ByteSliceToString(sfs.Fstypename[:]))
	}
	return nil
}
