package contain

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Doctor reports what this macOS host offers for the process-group backend and
// what that backend cannot do. It changes nothing.
func Doctor(ScopeFunc) Diagnosis {
	var d Diagnosis

	var uts unix.Utsname
	_ = unix.Uname(&uts)
	kernel := "Darwin " + unix.ByteSliceToString(uts.Release[:])
	if v, err := unix.Sysctl("kern.osproductversion"); err == nil {
		kernel += ", macOS " + v
	}
	d.add("kernel", true, kernel)
	d.add("cgroup v2", false, "cgroups exist only on Linux: the process-group backend is the only one here")
	d.add("process groups and sessions", true, "the guardian runs in a session of its own and each protected group in a process group of its own, led by a shim that is never reaped before its group is empty")

	if all, err := platform.NewProcReader().All(nil); err != nil {
		d.add("process table (kern.proc)", false, err.Error()+": no descendant can be found, so nothing can be proven")
	} else {
		d.add("process table (kern.proc)", true, fmt.Sprintf("%d processes read in one sysctl kern.proc.all; members are found by parent links, process group and session", len(all)))
	}
	werr := probeProcWatch()
	d.add("kqueue EVFILT_PROC", werr == nil, procWatchDetail(werr))
	d.add("pidfd", false, "macOS has none: each signal re-checks the process's start time just before kill(2), a narrow recycling window; group signals go through a leader we have not reaped, whose id cannot be recycled")
	d.add("child subreaper", false, fmt.Sprintf("macOS has none: orphans re-parent to launchd; they stay followed by process group, session and tracking (a scan at every fork and exit of a member, at least every %v)", trackInterval))
	d.add("containment limit", false, parentChainLimit)
	d.add("resource limits", false, "--memory-max, --cpu-max and --max-processes exit 64 here: macOS limits processes one by one (rlimits), never a whole tree")
	d.addIsolation()
	d.add("no-new-privileges", false, "macOS has no equivalent: a setuid program the worker runs gains its privileges")

	b, err := ResolveBackend(BackendRequest{Containment: "auto"})
	if err != nil {
		d.Backend, d.Reason = "none", err.Error()
	} else {
		d.Backend, d.Reason = b.Name, b.String()
	}
	return d
}

// probeProcWatch registers an exit and fork filter on this process.
func probeProcWatch() error {
	w, err := platform.NewProcWatch()
	if err != nil {
		return err
	}
	defer w.Close()
	return w.Add(os.Getpid())
}

func procWatchDetail(err error) string {
	if err != nil {
		return err.Error() + ": teardown and tracking fall back to polling the process table"
	}
	return "exit and fork notifications wake teardown and tracking instead of polling (NOTE_TRACK, which would follow forks itself, is unsupported since Mac OS X 10.5)"
}
