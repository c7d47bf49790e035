package contain

import (
	"errors"
	"fmt"
	"math"
)

// ErrBackend marks a backend request that cannot be honoured (exit 64).
var ErrBackend = errors.New("containment unavailable")

// ResolveBackend: on Windows the job-object backend is the only one, and auto
// picks it. The worker's job gets an active-process limit only when
// --max-processes is given: a limit the kernel would not keep (Wine keeps none)
// makes the job's read-back fail, which must be the user's explicit choice.
// Whether the job can be created here is found out when the run creates it
// (exit 70 before anything starts); doctor probes it.
func ResolveBackend(req BackendRequest) (Backend, error) {
	switch req.Containment {
	case "", "auto", BackendJob:
	case BackendCgroup:
		return Backend{}, fmt.Errorf("%w: the cgroup backend needs Linux; Windows uses job objects (--containment job)", ErrBackend)
	case BackendProcessGroup:
		return Backend{}, fmt.Errorf("%w: the process-group backend needs unix; Windows uses job objects (--containment job)", ErrBackend)
	default:
		return Backend{}, fmt.Errorf("%w: unknown --containment %q (auto, job)", ErrBackend, req.Containment)
	}
	if req.CgroupParent != "" {
		return Backend{}, fmt.Errorf("%w: --cgroup-parent needs Linux cgroup v2", ErrBackend)
	}
	b := Backend{Name: BackendJob, Note: "KILL_ON_JOB_CLOSE, breakaway off"}
	if req.MaxSet {
		if req.MaxProcesses <= 0 || req.MaxProcesses > math.MaxUint32 {
			return Backend{}, fmt.Errorf("%w: --max-processes %d is out of range", ErrBackend, req.MaxProcesses)
		}
		b.PidMax = req.MaxProcesses
		b.Note += fmt.Sprintf("; worker active-process limit %d", b.PidMax)
	} else {
		b.Note += "; no active-process limit (--max-processes sets one)"
	}
	if err := jobLimits(&b, req); err != nil {
		return Backend{}, err
	}
	for _, n := range limitNotes(b) {
		b.Note += "; " + n
	}
	b.Limited = b.Limited || req.MaxSet
	return b, nil
}
