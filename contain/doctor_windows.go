package contain

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Doctor reports what this Windows host offers for the job-object backend. It
// creates and closes two empty probe jobs and starts nothing.
func Doctor(ScopeFunc) Diagnosis {
	var d Diagnosis

	v := windows.RtlGetVersion()
	kernel := fmt.Sprintf("Windows %d.%d build %d", v.MajorVersion, v.MinorVersion, v.BuildNumber)
	wineVer, wine := platform.WineVersion()
	if wine {
		kernel += ", under Wine " + wineVer
	}
	d.add("kernel", true, kernel)
	d.add("cgroup v2", false, "cgroups exist only on Linux: job objects are the backend here")

	inJob, nesting, err := platform.InOuterJob()
	switch {
	case err != nil:
		d.add("outer job", false, "IsProcessInJob: "+err.Error())
	case !inJob:
		d.add("outer job", true, "this process runs in no job: the run's jobs are top-level")
	case nesting:
		d.add("outer job", true, "this process already runs inside a job (a CI runner, RunAs or Task Scheduler put it there); jobs nest here (Windows 8 and later), so the run's jobs are created inside it, and the outer job's own limits still apply")
	default:
		d.add("outer job", false, "this process runs inside a job and this Windows is older than 8, where jobs cannot nest: a process in a job cannot be assigned to another, so no worker could be born inside its own job; run the supervisor outside the job (or let the outer job allow breakaway for it)")
	}

	j, err := platform.NewJob(platform.JobLimits{})
	switch {
	case err != nil:
		d.add("job object", false, err.Error()+": every run exits 70 before starting anything")
	case j.LimitsVerified():
		d.add("job object", true, "created with KILL_ON_JOB_CLOSE, BREAKAWAY_OK and SILENT_BREAKAWAY_OK off, and read back as set; workers are created suspended inside their job; emptiness is proven from the job's accounting (ActiveProcesses == 0)")
	default:
		d.add("job object", true, "created with KILL_ON_JOB_CLOSE and breakaway off, but this kernel returns zeroed limit records (Wine), so the limits cannot be read back: unverified; emptiness is still proven from the job's accounting")
	}
	if j != nil {
		_ = j.Close()
	}
	lj, err := platform.NewJob(platform.JobLimits{MaxProcesses: DefaultMaxProcesses})
	switch {
	case errors.Is(err, platform.ErrJobLimits):
		d.add("active-process limit", false, err.Error()+": --max-processes would make every run exit 70, so a fork storm is not bounded here")
	case err != nil:
		d.add("active-process limit", false, err.Error())
	default:
		d.add("active-process limit", true, "--max-processes bounds the worker job's live processes (JOB_OBJECT_LIMIT_ACTIVE_PROCESS); without the flag there is no limit")
		_ = lj.Close()
	}
	d.jobLimitFacts()
	// Probed without sending anything: an event to group 0 would reach every
	// process on our console, the user's shell included.
	const noGraceful = "so groups cannot be stopped gracefully: teardown goes straight to TerminateJobObject, and a hold cannot be asked to release (its lease ages out by its TTL)"
	if _, err := windows.GetConsoleCP(); wine {
		d.add("console control events", false, "Wine does not deliver CTRL_BREAK_EVENT to a console process group (GenerateConsoleCtrlEvent fails), "+noGraceful)
	} else if err != nil {
		d.add("console control events", false, "no console is attached (a service, or started detached), "+noGraceful)
	} else {
		d.add("console control events", true, "CTRL_BREAK_EVENT reaches each group (started with CREATE_NEW_PROCESS_GROUP) for a graceful stop before TerminateJobObject; Ctrl-C stops the supervisor with 130, Ctrl-Break or closing the console with 143")
	}
	d.add("continuous clock", true, "GetTickCount64 counts suspend and hibernation; the supervisor checks its own deadline on it every 100ms")
	d.add("supervisor killed", true, "no guardian is needed: the jobs are KILL_ON_JOB_CLOSE, so the kernel kills both groups when the supervisor's handles close, however it dies")
	d.addIsolation()
	d.add("escapes no job prevents", false, "processes created on the worker's behalf by other system components (WMI Win32_Process.Create, services, scheduled tasks, out-of-process COM servers) are not in its job")

	b, err := ResolveBackend(BackendRequest{Containment: "auto"})
	if err != nil {
		d.Backend, d.Reason = "none", err.Error()
	} else {
		d.Backend, d.Reason = b.Name, b.String()
	}
	return d
}
