//go:build unix

package platform

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// SyncDir makes the entries created in the open directory d durable. A few
// file systems cannot fsync a directory (EINVAL); they have nothing to make
// durable that way.
func SyncDir(d *os.File) error {
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}
