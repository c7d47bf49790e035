package contain

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/octostore-supervisor/supervisor/platform"
)

// workerJobLimits are the worker job's limits, as b asks for them.
func workerJobLimits(b Backend) platform.JobLimits {
	return platform.JobLimits{MaxProcesses: uint32(b.PidMax), MemoryMax: uint64(b.MemoryMax), CPURate: cpuRate(b.CPUMilli, runtime.NumCPU())}
}

// cpuRate turns thousandths of a CPU into a job's CPU rate: hundredths of a
// percent of all ncpu processors, at least 1 (0.01%) and at most 10000 (all
// of them: a limit above the host's CPUs is no limit, as cpu.max's is not).
func cpuRate(milli, ncpu int) uint32 {
	if milli <= 0 {
		return 0
	}
	return uint32(min(max(milli*10/max(ncpu, 1), 1), 10000))
}

// jobLimits takes the request's memory and CPU limits into b once a probe
// job has kept them (set and read back as set), so a limit this host cannot
// enforce is refused before anything starts: under Wine 8 both are (no job
// memory limit is kept, and CPU rate control is not implemented).
func jobLimits(b *Backend, req BackendRequest) error {
	if req.MemoryMax <= 0 && req.CPUMilli <= 0 {
		return nil
	}
	probe := Backend{MemoryMax: req.MemoryMax, CPUMilli: req.CPUMilli}
	j, err := platform.NewJob(workerJobLimits(probe))
	if err != nil {
		flags := BackendRequest{MemoryMax: req.MemoryMax, CPUMilli: req.CPUMilli}.limitFlags()
		if errors.Is(err, platform.ErrJobLimits) {
			return fmt.Errorf("%w: %s cannot be enforced by this host's job objects: %w", ErrBackend, flags, err)
		}
		return fmt.Errorf("%w: %s: %w", ErrBackend, flags, err)
	}
	_ = j.Close()
	b.MemoryMax, b.CPUMilli, b.Limited = req.MemoryMax, req.CPUMilli, true
	return nil
}

// jobLimitHit is what a job's notifications say ended its group, in the
// order Report.LimitHit gives them.
func jobLimitHit(j *platform.Job) string {
	switch memory, processes := j.LimitsHit(); {
	case memory:
		return LimitMemory
	case processes:
		return LimitPids
	}
	return ""
}

// jobLimitFacts says in doctor whether a probe job keeps a memory limit and
// a CPU rate, as --memory-max and --cpu-max would set them.
func (d *Diagnosis) jobLimitFacts() {
	for _, l := range []struct {
		name, flag, what string
		limits           platform.JobLimits
	}{
		{"memory limit", "--memory-max", "the worker job's memory limit (JOB_OBJECT_LIMIT_JOB_MEMORY): an allocation past it fails, and its notification names the limit", platform.JobLimits{MemoryMax: 64 << 20}},
		{"cpu limit", "--cpu-max", "the worker job's hard-capped CPU rate (JOBOBJECT_CPU_RATE_CONTROL_INFORMATION)", platform.JobLimits{CPURate: 5000}},
	} {
		j, err := platform.NewJob(l.limits)
		if err != nil {
			d.add(l.name, false, fmt.Sprintf("%s exits 64 here: %v", l.flag, err))
			continue
		}
		_ = j.Close()
		d.add(l.name, true, fmt.Sprintf("%s sets %s (set and read back in a probe job)", l.flag, l.what))
	}
}
