package contain

import "fmt"

// BackendCgroup names the cgroup v2 backend in flags and reports.
const BackendCgroup = "cgroup"

// BackendJob names the Windows job-object backend in flags and reports.
const BackendJob = "job"

// Backend is the containment mechanism a run uses, resolved before anything
// starts (ResolveBackend) and reported on stderr and in every terminal line.
type Backend struct {
	Name   string // BackendCgroup, BackendProcessGroup or BackendJob
	Mount  string // cgroup: the v2 mount point
	Parent string // cgroup: the directory runs are created below
	Join   bool   // cgroup: clone3 is refused, so programs join their leaf through a re-exec
	PidMax int    // cgroup: pids.max of the worker leaf; job: the worker job's active-process limit; 0: no limit
	Note   string // why this backend (and what it lacks), for the start line and doctor
}

// String is the one-line description printed at start.
func (b Backend) String() string {
	switch b.Name {
	case BackendCgroup:
		return fmt.Sprintf("cgroup under %s (%s)", b.Parent, b.Note)
	case BackendJob:
		return fmt.Sprintf("job (%s)", b.Note)
	}
	return fmt.Sprintf("process-group (%s)", b.Note)
}

// BackendRequest is what the command line asked for.
type BackendRequest struct {
	Containment  string // auto, cgroup, process-group or job
	CgroupParent string // optional absolute directory on the cgroup v2 mount
	MaxProcesses int    // pids.max for the worker leaf; 0 means the default
	MaxSet       bool   // MaxProcesses was given explicitly
}

// DefaultMaxProcesses is the worker leaf's pids.max when the pids controller is available.
const DefaultMaxProcesses = 4096
