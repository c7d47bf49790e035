//go:build unix && !linux

package contain

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

var errNoPidNS = errors.New("PID namespaces exist only on Linux")

func privatePidsProbe() error { return errNoPidNS }

// PidInitMain exists only where PID namespaces do.
func PidInitMain([]string) int {
	fmt.Fprintln(os.Stderr, "octostore-supervisor: "+errNoPidNS.Error())
	return ExitSoftware
}

// isolate runs the worker under its worker user, if any, with no
// supplementary groups.
func isolate(iso *Isolation, argv []string, _ bool, _ int) (string, []string, *syscall.SysProcAttr, error) {
	sys := &syscall.SysProcAttr{}
	if iso == nil {
		return argv[0], argv, sys, nil
	}
	if iso.PrivatePids {
		return "", nil, nil, errNoPidNS
	}
	if iso.User != nil {
		sys.Credential = credential(iso.User)
	}
	return argv[0], argv, sys, nil
}

// shimPidfd: no namespace init to hand one to.
func (program) shimPidfd() (*os.File, error) { return nil, nil }
