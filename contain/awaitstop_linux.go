package contain

import (
	"errors"

	"golang.org/x/sys/unix"
)

// awaitStop blocks until our child pid is stopped (SIGSTOP, SIGTSTP...) and
// then reports true, or reports false once pid is no longer a child to wait
// for. The kernel tells a parent about a child's stop, so no heartbeat has to
// wake anyone while all is well. WNOWAIT leaves the stop to be seen again, and
// WEXITED is not asked for, so the reaper's wait for the exit is untouched.
func awaitStop(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil
	}
}
