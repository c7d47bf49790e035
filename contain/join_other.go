//go:build !linux

package contain

import (
	"errors"
	"syscall"
	"time"
)

func intoCgroup(sys *syscall.SysProcAttr, _ int) *syscall.SysProcAttr { return sys }
func clone3Refused(error) bool                                        { return false }

// JoinMain exists only where cgroups do.
func JoinMain([]string) int { return ExitSoftware }

func killLeafDir(string, time.Duration) ([]int, bool, error) {
	return nil, false, errors.New("cgroups need Linux")
}
