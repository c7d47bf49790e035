package procid

import (
	"errors"

	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/platform"
)

func self() (ID, error) {
	pid := windows.GetCurrentProcessId()
	start, err := platform.ProcessStartTime(pid)
	if err != nil {
		return ID{}, err
	}
	return ID{Pid: int(pid), Start: start}, nil
}

// alive: a process object lives on while any handle to it is open, so an
// exited process is told apart by its (signalled) handle, and a reused pid by
// its creation time. A process we may not open counts as alive.
func alive(id ID) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(id.Pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	if ev, err := windows.WaitForSingleObject(h, 0); err == nil && ev != uint32(windows.WAIT_TIMEOUT) {
		return false
	}
	if id.Start == 0 {
		return true
	}
	start, err := platform.ProcessStartTime(uint32(id.Pid))
	return err != nil || start == id.Start
}
