package pidfile

import (
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/platform"
)

// selfStart is the calling process's creation time (platform.ProcessStartTime,
// 100 ns units since 1601).
func selfStart() (uint64, error) {
	return platform.ProcessStartTime(windows.GetCurrentProcessId())
}
