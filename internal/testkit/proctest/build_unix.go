//go:build unix

package proctest

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedNotShared accepts a file or directory only if this user owns it and
// nobody else may write to it.
func ownedNotShared(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("no owner for %s", fi.Name())
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not us (%d)", fi.Name(), st.Uid, os.Geteuid())
	}
	if fi.Mode()&0o022 != 0 || fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s has mode %v: writable by others, or a link", fi.Name(), fi.Mode())
	}
	return nil
}
