//go:build !linux && !darwin && !windows

package procid

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

func self() (ID, error) {
	return ID{Pid: os.Getpid()}, fmt.Errorf("process start times need Linux, macOS or Windows: %w", errors.ErrUnsupported)
}

// alive has only signal 0 here: it cannot tell a zombie or a reused pid from
// the recorded process, so both count as alive (a wait, never an overlap).
func alive(id ID) bool {
	p, err := os.FindProcess(id.Pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
