package platform

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The job's CPU rate control and its limit notifications, which x/sys lacks
// (read at v0.50.0).

// jobObjectCPURateControlInformation is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION
// with its union as CpuRate.
type jobObjectCPURateControlInformation struct {
	ControlFlags uint32
	CPURate      uint32
}

const (
	jobObjectCPURateControlEnable  = 0x1
	jobObjectCPURateControlHardCap = 0x4

	// Completion-port messages (the packet's byte count) that name a limit.
	jobObjectMsgActiveProcessLimit = 3
	jobObjectMsgJobMemoryLimit     = 10
)

// What a job's notifications said was hit, as bits of Job.hits.
const (
	hitMemory uint32 = 1 << iota
	hitProcesses
)

// setCPURate gives the job a hard-capped CPU rate (rate > 0) and reads it
// back. Wine 8 refuses the information class ("Invalid parameter"): no job
// there has a CPU limit.
func (j *Job) setCPURate(rate uint32, wine bool) error {
	if rate == 0 {
		return nil
	}
	info := jobObjectCPURateControlInformation{ControlFlags: jobObjectCPURateControlEnable | jobObjectCPURateControlHardCap, CPURate: rate}
	if _, err := windows.SetInformationJobObject(j.h, windows.JobObjectCpuRateControlInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		if wine {
			return fmt.Errorf("%w: Wine implements no job CPU rate control (%w)", ErrJobLimits, err)
		}
		return fmt.Errorf("%w: set the job's CPU rate: %w", ErrJobLimits, err)
	}
	var back jobObjectCPURateControlInformation
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectCpuRateControlInformation,
		uintptr(unsafe.Pointer(&back)), uint32(unsafe.Sizeof(back)), nil); err != nil {
		return fmt.Errorf("read back the job's CPU rate: %w", err)
	}
	if back != info {
		return fmt.Errorf("%w: CPU rate control reads back as flags %#x rate %d, not %#x rate %d",
			ErrJobLimits, back.ControlFlags, back.CPURate, info.ControlFlags, info.CPURate)
	}
	return nil
}

// limitHit maps a completion-port message to the limit it reports, if any.
func limitHit(msg uint32) uint32 {
	switch msg {
	case jobObjectMsgJobMemoryLimit:
		return hitMemory
	case jobObjectMsgActiveProcessLimit:
		return hitProcesses
	}
	return 0
}

// LimitsHit reports which of the job's limits its notifications said were
// hit: the job memory limit (an allocation past it failed; Windows kills
// nothing for it) and the active-process limit (a process creation was
// refused). It first reads what is still queued on the completion port,
// without waiting. Windows does not guarantee job notifications, so false
// is no proof that a limit was never reached.
func (j *Job) LimitsHit() (memory, processes bool) {
	_ = j.use(func() error {
		for {
			var qty uint32
			var key uintptr
			var ov *windows.Overlapped
			if err := windows.GetQueuedCompletionStatus(j.port, &qty, &key, &ov, 0); err != nil {
				return nil
			}
			if key == keyJob {
				j.hits.Or(limitHit(qty))
			}
		}
	})
	h := j.hits.Load()
	return h&hitMemory != 0, h&hitProcesses != 0
}
