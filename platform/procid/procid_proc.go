//go:build linux || darwin

package procid

import (
	"errors"
	"os"

	"github.com/octostore-supervisor/supervisor/platform"
)

func self() (ID, error) {
	p, err := platform.NewProcReader().Stat(os.Getpid())
	if err != nil {
		return ID{}, err
	}
	return ID{Pid: p.Pid, Start: p.StartTicks}, nil
}

// alive judges the process by one read of its state and start time
// (platform.ProcReader.Stat, Proc.Dead): the project's one liveness test.
func alive(id ID) bool {
	p, err := platform.NewProcReader().Stat(id.Pid)
	if errors.Is(err, platform.ErrNoProcess) {
		return false
	}
	if err != nil {
		return true
	}
	if p.Dead() {
		return false
	}
	return id.Start == 0 || p.StartTicks == id.Start
}
