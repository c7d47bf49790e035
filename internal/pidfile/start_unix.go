//go:build linux || darwin

package pidfile

import (
	"os"

	"github.com/octostore-supervisor/supervisor/platform"
)

// selfStart is platform.Proc.StartTicks of the calling process: clock ticks
// since boot on Linux, microseconds since the epoch on macOS.
func selfStart() (uint64, error) {
	p, err := platform.NewProcReader().Stat(os.Getpid())
	if err != nil {
		return 0, err
	}
	return p.StartTicks, nil
}
