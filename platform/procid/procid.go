// Package procid names one process across time: its pid together with its
// start time, so that a pid the kernel has since handed to another process is
// not mistaken for the one recorded. It is the one liveness test for records
// that outlive the processes they name (the local authority's holder record,
// the supervisor's survivor record).
//
// It sits under platform because both the hold's local authority (hold/local)
// and the supervisor (contain) build on it, and neither may import the other.
package procid

// ID is a pid and the start time the platform reports for it: clock ticks
// since boot on Linux (platform.Proc.StartTicks), microseconds since the epoch
// on macOS, the creation FILETIME on Windows. Start 0 means unknown (a record
// written before start times were kept): then only the pid is judged.
type ID struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
}

// Self is the calling process's ID.
func Self() (ID, error) { return self() }

// Alive reports whether the process id names may still run. A zombie, or
// a process being torn down, is dead; a live process with another start time
// is a different process that reuses the pid, so id's is dead too. Anything
// that cannot be judged (a permission error, an unreadable process table)
// counts as alive: callers wait on what is alive, so doubt must make them wait.
func (id ID) Alive() bool {
	if id.Pid <= 0 {
		return false
	}
	return alive(id)
}
