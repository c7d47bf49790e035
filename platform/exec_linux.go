package platform

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Executable reports an error when the file system dir is on does not let
// programs execute: a mount with noexec, as systemd hosts mount /run and
// /dev/shm. It reads the mount's flags as this process sees them (statfs),
// which is what execve will check.
func Executable(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if st.Flags&unix.ST_NOEXEC != 0 {
		return fmt.Errorf("%s is on a file system mounted noexec", dir)
	}
	return nil
}
