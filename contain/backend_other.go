//go:build !linux && !windows

package contain

import (
	"errors"
	"fmt"
)

// ErrBackend marks a backend request that cannot be honoured (exit 64).
var ErrBackend = errors.New("containment unavailable")

// ResolveBackend: cgroups exist only on Linux.
func ResolveBackend(req BackendRequest) (Backend, error) {
	switch req.Containment {
	case "", "auto", BackendProcessGroup:
		if req.CgroupParent != "" {
			return Backend{}, fmt.Errorf("%w: --cgroup-parent needs Linux cgroup v2", ErrBackend)
		}
		if req.limitsAsked() {
			// macOS has no limit on a tree of processes: setrlimit binds
			// each process alone, so a tree of n processes would get n times
			// the limit, which is not what the flags promise.
			return Backend{}, fmt.Errorf("%w: %s: macOS cannot limit a whole process tree (its rlimits are per process); the limits need Linux cgroup v2 or Windows job objects", ErrBackend, req.limitFlags())
		}
		return Backend{Name: BackendProcessGroup, Note: "the only backend on this platform"}, nil
	case BackendCgroup:
		return Backend{}, fmt.Errorf("%w: the cgroup backend needs Linux", ErrBackend)
	case BackendJob:
		return Backend{}, fmt.Errorf("%w: the job backend needs Windows", ErrBackend)
	}
	return Backend{}, fmt.Errorf("%w: unknown --containment %q (auto, cgroup, process-group, job)", ErrBackend, req.Containment)
}
