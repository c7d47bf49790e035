package contain

import (
	"fmt"
	"os"
)

// Windows has no guardian and no shims: the supervisor holds a job object per
// group, which the kernel closes, killing every process in it, when the
// supervisor dies (host_windows.go). HelperMain still knows their argv[1],
// so an argv that names one is refused here rather than taken for a command
// line.

// GuardianMain refuses: there is no guardian on Windows.
func GuardianMain() int {
	fmt.Fprintln(os.Stderr, "octostore-supervisor: there is no guardian process on Windows")
	return ExitSoftware
}

// ShimMain refuses: there are no shims on Windows.
func ShimMain() int {
	fmt.Fprintln(os.Stderr, "octostore-supervisor: there is no shim process on Windows")
	return ExitSoftware
}
