//go:build windows

package proctest

import (
	"errors"
	"io/fs"
)

// ownedNotShared: the Windows tests run prebuilt binaries (make
// windows-bins) and build nothing, so no cache is ever trusted.
func ownedNotShared(fs.FileInfo) error {
	return errors.New("BuildShared is not supported on Windows")
}
