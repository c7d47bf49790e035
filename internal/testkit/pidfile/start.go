//go:build linux || darwin || windows

package pidfile

import "github.com/octostore-supervisor/supervisor/platform/procid"

// selfStart is the calling process's start time as procid keeps it:
// platform.Proc.StartTicks on Linux and macOS, the creation FILETIME on Windows.
func selfStart() (uint64, error) {
	id, err := procid.Self()
	return id.Start, err
}
