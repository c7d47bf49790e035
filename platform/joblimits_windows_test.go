package platform

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// allocTotal is what the "alloc" helper commits, well past allocLimit.
const (
	allocLimit = 64 << 20
	allocTotal = 256 << 20
	// helperAllocFailed: an allocation of the "alloc" helper failed.
	helperAllocFailed = 6
)

// limitHelper runs the helpers of the limit tests: "alloc" commits
// allocTotal in 16 MiB steps (a job's memory limit counts committed memory,
// touched or not), exiting helperAllocFailed when one is refused.
func limitHelper(mode string) (int, bool) {
	if mode != "alloc" {
		return 0, false
	}
	const step = 16 << 20
	for done := 0; done < allocTotal; done += step {
		if _, err := windows.VirtualAlloc(0, step, windows.MEM_COMMIT|windows.MEM_RESERVE, windows.PAGE_READWRITE); err != nil {
			fmt.Fprintf(os.Stderr, "alloc: refused after %d MiB: %v\n", done>>20, err)
			return helperAllocFailed, true
		}
	}
	return 0, true
}

// waitExit waits for p's exit code.
func waitExit(t *testing.T, p *Process) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	return code
}

// A job memory limit is kept: an allocation past it fails, and the job's
// notification says the memory limit was hit.
func TestJobMemoryLimit(t *testing.T) {
	if v, wine := WineVersion(); wine {
		t.Skipf("Wine %s keeps no job memory limit; TestJobMemoryLimitRefusedUnderWine proves it and the refusal", v)
	}
	j := newJob(t, JobLimits{MemoryMax: allocLimit})
	require.True(t, j.LimitsVerified())
	p := start(t, j, helperSpec(t, "alloc"))
	require.Equal(t, uint32(helperAllocFailed), waitExit(t, p))
	requireJobEmpty(t, j)
	memory, processes := j.LimitsHit()
	require.True(t, memory, "no JOB_OBJECT_MSG_JOB_MEMORY_LIMIT")
	require.False(t, processes)
}

// Wine 8 accepts a job memory limit and keeps none: a process in such a job
// commits four times the limit, and the limit reads back as zero. NewJob
// therefore refuses it, so --memory-max exits 64 there. If a later Wine
// enforces it, the first half fails: accept the limit under Wine then.
func TestJobMemoryLimitRefusedUnderWine(t *testing.T) {
	if _, wine := WineVersion(); !wine {
		t.Skip("only Wine lacks the job memory limit; TestJobMemoryLimit covers Windows")
	}
	j := newJob(t, JobLimits{})
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation = wantLimits(JobLimits{MemoryMax: allocLimit})
	info.JobMemoryLimit = allocLimit
	_, err := windows.SetInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	require.NoError(t, err, "Wine accepts the limit")
	p := start(t, j, helperSpec(t, "alloc"))
	require.Equal(t, uint32(0), waitExit(t, p), "Wine now enforces the job memory limit")
	requireJobEmpty(t, j)

	_, err = NewJob(JobLimits{MemoryMax: allocLimit})
	require.ErrorIs(t, err, ErrJobLimits)
	require.ErrorContains(t, err, "Wine keeps no job memory limit")
}

// A hard-capped CPU rate is set and reads back as set.
func TestJobCPURate(t *testing.T) {
	if v, wine := WineVersion(); wine {
		t.Skipf("Wine %s implements no job CPU rate control; TestJobLimitsRefusedUnderWine covers it", v)
	}
	j := newJob(t, JobLimits{CPURate: 2500})
	var back jobObjectCPURateControlInformation
	require.NoError(t, windows.QueryInformationJobObject(j.h, windows.JobObjectCpuRateControlInformation,
		uintptr(unsafe.Pointer(&back)), uint32(unsafe.Sizeof(back)), nil))
	require.Equal(t, jobObjectCPURateControlInformation{ControlFlags: jobObjectCPURateControlEnable | jobObjectCPURateControlHardCap, CPURate: 2500}, back)
}

// Wine 8 keeps no active-process limit and refuses the CPU rate control
// information class, so no job there has either, and NewJob says so
// (--max-processes exits 70 there, --cpu-max 64).
func TestJobLimitsRefusedUnderWine(t *testing.T) {
	if _, wine := WineVersion(); !wine {
		t.Skip("only Wine lacks these limits; TestMaxProcesses and TestJobCPURate cover Windows")
	}
	for _, c := range []struct {
		name   string
		limits JobLimits
		says   string
	}{
		{"active processes", JobLimits{MaxProcesses: 2}, "Wine keeps no active-process limit"},
		{"CPU rate", JobLimits{CPURate: 2500}, "Wine implements no job CPU rate control"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewJob(c.limits)
			require.ErrorIs(t, err, ErrJobLimits)
			require.ErrorContains(t, err, c.says)
		})
	}
}

// The job's limit notifications are recorded from its completion port,
// whoever reads it (WaitEmpty, or LimitsHit itself), and other messages and
// keys are not taken for them. The packets are posted as the kernel would
// post them, so this runs under Wine too, whose jobs never hit a limit.
func TestJobLimitNotifications(t *testing.T) {
	j := newJob(t, JobLimits{})
	post := func(msg uint32, key uintptr) {
		require.NoError(t, windows.PostQueuedCompletionStatus(j.port, msg, key, nil))
	}
	post(6, keyJob) // JOB_OBJECT_MSG_NEW_PROCESS
	post(jobObjectMsgJobMemoryLimit, keyWake)
	memory, processes := j.LimitsHit()
	require.False(t, memory)
	require.False(t, processes)

	// WaitEmpty reads the port while the job has a process.
	start(t, j, helperSpec(t, "sleep"))
	post(jobObjectMsgJobMemoryLimit, keyJob)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.Error(t, j.WaitEmpty(ctx))
	require.Equal(t, hitMemory, j.hits.Load(), "WaitEmpty did not record the notification")
	require.NoError(t, j.Terminate(1))
	requireJobEmpty(t, j)
	memory, processes = j.LimitsHit()
	require.True(t, memory)
	require.False(t, processes)

	post(jobObjectMsgActiveProcessLimit, keyJob)
	memory, processes = j.LimitsHit()
	require.True(t, memory, "a hit stays recorded")
	require.True(t, processes)
}
