package contain

import (
	"errors"
	"fmt"
	"time"
)

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
	Top    string // cgroup: the highest cgroup whose control files are ours to write (Parent on a systemd host)
	Join   bool   // cgroup: clone3 is refused, so programs join their leaf through a re-exec
	PidMax int    // cgroup: pids.max of the worker leaf; job: the worker job's active-process limit; 0: no limit
	Note   string // why this backend (and what it lacks), for the start line and doctor
	// MemoryMax is the worker group's memory limit in bytes (cgroup:
	// memory.max, with memory.swap.max 0 and memory.oom.group 1; job: its
	// job memory limit); 0: none.
	MemoryMax int64
	// CPUMilli is the worker group's CPU limit in thousandths of a CPU
	// (cgroup: cpu.max; job: a hard-capped CPU rate); 0: none.
	CPUMilli int
	// Limited says a resource limit was asked for explicitly: the worker
	// group's containment report then carries its usage and the limit it
	// hit on every command, not only run's (see Report).
	Limited bool
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
	MemoryMax    int64  // --memory-max in bytes; 0: none
	CPUMilli     int    // --cpu-max in thousandths of a CPU; 0: none
	// LookOnly: find where runs are (sweep), moving nothing, this process
	// included, and starting no scope.
	LookOnly bool
	Scope    ScopeFunc
}

// ScopeFunc asks systemd for its scope delegated to supervisors
// (platform/systemd): join moves this process into it, starting it if need
// be; else it is only looked up ("" for none). It returns the scope's cgroup
// below the mount. nil: no D-Bus client is linked (the helper images), and a
// systemd host without a cgroup delegated to us has no cgroup backend.
type ScopeFunc func(join bool) (string, error)

// ErrNoScope: looking only (sweep), systemd has no scope of ours, so no run
// of a supervisor is left on this host.
var ErrNoScope = errors.New("systemd has no scope of ours: no supervisor runs on this host, and no run of one is left")

// DefaultMaxProcesses is the worker leaf's pids.max when the pids controller is available.
const DefaultMaxProcesses = 4096

// StaleRun is a run directory whose supervisor and guardian are both gone.
type StaleRun struct {
	Dir         string `json:"dir"`
	Processes   int    `json:"processes"`
	ProvenEmpty bool   `json:"proven_empty"`
	Removed     bool   `json:"removed"`
	// NotOurs: the directory is named like a run but carries no
	// supervisor's mark for itself made in our PID namespace, so no sweep
	// kills or removes it (a name alone is no proof, and pids of another
	// namespace cannot be judged; see runMarkXattr). ProvenEmpty is then only
	// what the kernel shows.
	NotOurs bool `json:"not_ours,omitempty"`
	// OtherPIDNamespace: NotOurs because a supervisor marked it in another
	// PID namespace; it may well be live.
	OtherPIDNamespace bool `json:"other_pid_namespace,omitempty"`
	// UnprovenSince is when a start-up sweep found the run could not be
	// proven empty and marked it, so later starts do not wait on it again.
	UnprovenSince string `json:"unproven_since,omitempty"`
	// MarkErr says why that mark could not be set (every start then tries
	// the run again).
	MarkErr string `json:"-"`
}

// NotOursWhy says why a NotOurs run is left alone.
func (s StaleRun) NotOursWhy() string {
	if s.OtherPIDNamespace {
		return "made by a supervisor in another PID namespace (a container sharing these cgroups), whose pids cannot be judged from here"
	}
	return "named like a run but not marked by a supervisor"
}

// SweepStale finds runs below the backend's parent whose owners are both gone,
// and (unless dryRun) kills what is left in them, proves them empty and removes
// them. A run whose supervisor or guardian still lives is never touched, nor
// is a directory named like a run that no supervisor marked (NotOurs). This
// is the `sweep` command: it waits up to proof for each run, including runs an
// earlier start-up sweep marked as unprovable.
func SweepStale(b Backend, dryRun bool, proof time.Duration) ([]StaleRun, error) {
	mode := sweepAll
	if dryRun {
		mode = sweepList
	}
	return sweepRuns(b, mode, proof)
}

// sweepMode says how much a sweep does to each abandoned run.
type sweepMode int

const (
	sweepList    sweepMode = iota // only look (sweep --dry-run, doctor)
	sweepAll                      // kill, prove empty, remove (sweep)
	sweepStartup                  // as sweepAll, but a run that cannot be proven empty is marked and not waited for again
)
