package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// selfStartTime returns the kernel's p_starttime in microseconds since the
// epoch (macOS has no /proc); like Linux's field 22 it tells a recycled pid
// apart from the original process.
func selfStartTime() (string, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", os.Getpid())
	if err != nil {
		return "", err
	}
	t := kp.Proc.P_starttime
	return strconv.FormatInt(int64(t.Sec)*1_000_000+int64(t.Usec), 10), nil
}

func selfExe() (string, error) { return os.Executable() }
