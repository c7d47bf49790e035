package platform

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// ProcessStartTime is a process's creation time as Windows keeps it (a
// FILETIME: 100 ns intervals since 1601-01-01 UTC). With the pid it names one
// process: a reused pid gets a later creation time. It is what the pidfiles
// of the test programs record as START on Windows.
func ProcessStartTime(pid uint32) (uint64, error) {
	h := windows.CurrentProcess()
	if pid != windows.GetCurrentProcessId() {
		var err error
		h, err = windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
		if err != nil {
			return 0, fmt.Errorf("open process %d: %w", pid, err)
		}
		defer windows.CloseHandle(h)
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, fmt.Errorf("process %d times: %w", pid, err)
	}
	return uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime), nil
}
