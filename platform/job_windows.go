package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	// ErrJobLimits means a new job's limits did not read back as they were
	// set (or, under Wine, cannot be honoured): the job is not used.
	ErrJobLimits = errors.New("job object limits differ from what was set")
	// ErrJobClosed is returned by calls on a job after Close.
	ErrJobClosed = errors.New("job object closed")
	// ErrProcessClosed is returned by calls on a Process after Close.
	ErrProcessClosed = errors.New("process handle closed")
)

// JobLimits are the limits NewJob sets besides the fixed ones
// (KILL_ON_JOB_CLOSE on, breakaway off).
type JobLimits struct {
	// MaxProcesses is the job's active-process limit; 0 means none.
	MaxProcesses uint32
	// MemoryMax is the job's limit on the memory its processes commit
	// together (JOB_OBJECT_LIMIT_JOB_MEMORY), in bytes; 0 means none.
	MemoryMax uint64
	// CPURate is the job's hard-capped CPU rate, in hundredths of a percent
	// of all processors (1 to 10000); 0 means none.
	CPURate uint32
}

// completion keys on a job's port: the job's own notifications, and the
// packet WaitEmpty and Close post to wake a waiter.
const (
	keyJob  = 1
	keyWake = 2
)

// waitEmptyRecheckMillis bounds how long WaitEmpty trusts the completion
// port: job notifications are documented as not guaranteed, so the
// accounting is re-read at least this often even without a message.
const waitEmptyRecheckMillis = 250

// Job is a Windows job object with an I/O completion port. Processes are
// added only by Start, which puts them in before they run. Closing the last
// handle kills every process still in the job (KILL_ON_JOB_CLOSE), which is
// what contains a worker even when the supervisor is killed outright.
type Job struct {
	h, port windows.Handle
	// limitsVerified is false only under Wine, whose limit queries return
	// zeros (see NewJob).
	limitsVerified bool
	// hits are the limits the job's notifications said were hit
	// (limitHits), recorded as the completion port is read.
	hits atomic.Uint32

	// mu is held for reading by every call that uses the handles and for
	// writing by Close, so the handles are never closed (and their values
	// reused) under a running call. closing lets waiters notice Close.
	mu      sync.RWMutex
	closed  bool
	closing atomic.Bool
}

// NewJob creates an unnamed, non-inheritable job with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, both breakaway flags (BREAKAWAY_OK,
// SILENT_BREAKAWAY_OK) off, the optional active-process limit and a
// completion port, then reads the limits back and fails with ErrJobLimits,
// naming what differed, if they are not exactly what was set.
//
// Under Wine (see WineVersion) QueryInformationJobObject returns a zeroed
// record for every limit class, so the read-back proves nothing there:
// NewJob then accepts the zero record, reports LimitsVerified() == false,
// and refuses a MaxProcesses limit, which Wine's job objects do not keep at
// all. Everywhere else a zero record is a difference like any other.
func NewJob(l JobLimits) (*Job, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("CreateJobObject: %w", err)
	}
	j := &Job{h: h}
	if err := j.setup(l); err != nil {
		_ = windows.CloseHandle(h)
		if j.port != 0 {
			_ = windows.CloseHandle(j.port)
		}
		return nil, err
	}
	return j, nil
}

func (j *Job) setup(l JobLimits) error {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation = wantLimits(l)
	info.JobMemoryLimit = uintptr(l.MemoryMax)
	if _, err := windows.SetInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("set job limits: %w", err)
	}
	port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
	if err != nil {
		return fmt.Errorf("CreateIoCompletionPort: %w", err)
	}
	j.port = port
	assoc := jobObjectAssociateCompletionPort{CompletionKey: keyJob, CompletionPort: port}
	if _, err := windows.SetInformationJobObject(j.h, windows.JobObjectAssociateCompletionPortInformation,
		uintptr(unsafe.Pointer(&assoc)), uint32(unsafe.Sizeof(assoc))); err != nil {
		return fmt.Errorf("associate job completion port: %w", err)
	}
	var back windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&back)), uint32(unsafe.Sizeof(back)), nil); err != nil {
		return fmt.Errorf("read back job limits: %w", err)
	}
	_, wine := WineVersion()
	if j.limitsVerified, err = checkLimits(back.BasicLimitInformation, l, wine); err != nil {
		return err
	}
	if j.limitsVerified && l.MemoryMax > 0 && uint64(back.JobMemoryLimit) != l.MemoryMax {
		return fmt.Errorf("%w: job memory limit is %d bytes, not %d", ErrJobLimits, back.JobMemoryLimit, l.MemoryMax)
	}
	return j.setCPURate(l.CPURate, wine)
}

func wantLimits(l JobLimits) windows.JOBOBJECT_BASIC_LIMIT_INFORMATION {
	var b windows.JOBOBJECT_BASIC_LIMIT_INFORMATION
	b.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if l.MaxProcesses > 0 {
		b.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		b.ActiveProcessLimit = l.MaxProcesses
	}
	if l.MemoryMax > 0 {
		b.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
	}
	return b
}

// checkLimits compares the read-back limits with what NewJob set. It
// returns verified=false with no error only for Wine's all-zero stub record.
func checkLimits(got windows.JOBOBJECT_BASIC_LIMIT_INFORMATION, l JobLimits, wine bool) (verified bool, err error) {
	if wine && got == (windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{}) {
		if l.MaxProcesses > 0 {
			return false, fmt.Errorf("%w: Wine keeps no active-process limit, so a limit of %d processes would not be enforced",
				ErrJobLimits, l.MaxProcesses)
		}
		if l.MemoryMax > 0 {
			return false, fmt.Errorf("%w: Wine keeps no job memory limit (its jobs commit past it), so a limit of %d bytes would not be enforced",
				ErrJobLimits, l.MemoryMax)
		}
		return false, nil
	}
	want := wantLimits(l)
	var diffs []string
	named := []struct {
		flag uint32
		name string
	}{
		{windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, "KILL_ON_JOB_CLOSE"},
		{windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK, "BREAKAWAY_OK"},
		{windows.JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK, "SILENT_BREAKAWAY_OK"},
		{windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS, "ACTIVE_PROCESS"},
		{windows.JOB_OBJECT_LIMIT_JOB_MEMORY, "JOB_MEMORY"},
	}
	rest := got.LimitFlags ^ want.LimitFlags
	for _, f := range named {
		if rest&f.flag != 0 {
			diffs = append(diffs, fmt.Sprintf("%s is %s", f.name, onOff(got.LimitFlags&f.flag != 0)))
			rest &^= f.flag
		}
	}
	if rest != 0 {
		diffs = append(diffs, fmt.Sprintf("unexpected limit flags %#x", got.LimitFlags&rest))
	}
	if want.LimitFlags&windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS != 0 && got.ActiveProcessLimit != want.ActiveProcessLimit {
		diffs = append(diffs, fmt.Sprintf("active-process limit is %d, not %d", got.ActiveProcessLimit, want.ActiveProcessLimit))
	}
	if len(diffs) > 0 {
		return false, fmt.Errorf("%w: %s", ErrJobLimits, strings.Join(diffs, ", "))
	}
	return true, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// LimitsVerified reports whether NewJob could read the limits back from the
// kernel (false only under Wine; see NewJob).
func (j *Job) LimitsVerified() bool { return j.limitsVerified }

// use runs f with the handles guaranteed open.
func (j *Job) use(f func() error) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ErrJobClosed
	}
	return f()
}

// ActiveProcesses is the job's live process count from
// JobObjectBasicAccountingInformation: the kernel's own answer to "is the job
// empty", which is the proof teardown relies on.
func (j *Job) ActiveProcesses() (uint32, error) {
	var n uint32
	err := j.use(func() error {
		var err error
		n, err = j.activeProcesses()
		return err
	})
	return n, err
}

func (j *Job) activeProcesses() (uint32, error) {
	var info jobObjectBasicAccountingInformation
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return 0, fmt.Errorf("query job accounting: %w", err)
	}
	return info.ActiveProcesses, nil
}

// PIDs lists the processes in the job (JobObjectBasicProcessIdList), to name
// survivors. The list is a snapshot: a pid in it may exit at any moment.
func (j *Job) PIDs() ([]uint32, error) {
	var out []uint32
	err := j.use(func() error {
		// The record is two ULONGs and then ULONG_PTRs; words of uintptr
		// keep it aligned on every architecture.
		const hdr = 8 / unsafe.Sizeof(uintptr(0))
		n := uintptr(64)
		for {
			buf := make([]uintptr, hdr+n)
			err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicProcessIdList,
				uintptr(unsafe.Pointer(&buf[0])), uint32(uintptr(len(buf))*unsafe.Sizeof(buf[0])), nil)
			assigned := *(*uint32)(unsafe.Pointer(&buf[0]))
			listed := *(*uint32)(unsafe.Add(unsafe.Pointer(&buf[0]), 4))
			if err == windows.ERROR_MORE_DATA || (err == nil && listed < assigned && uintptr(assigned) > n) {
				// The buffer was short (the job may have grown since the
				// last try): retry with room for what it reported plus
				// headroom. A list shorter than the count in a buffer that
				// had room is a process ending meanwhile, not a reason to
				// retry.
				n = max(2*n, uintptr(assigned)+16)
				continue
			}
			if err != nil {
				return fmt.Errorf("query job process list: %w", err)
			}
			out = make([]uint32, listed)
			for i := range out {
				out[i] = uint32(buf[hdr+uintptr(i)])
			}
			return nil
		}
	})
	return out, err
}

// Terminate kills every process in the job at once (TerminateJobObject).
// Success means the kill was issued; WaitEmpty proves its effect.
func (j *Job) Terminate(exitCode uint32) error {
	return j.use(func() error {
		if err := windows.TerminateJobObject(j.h, exitCode); err != nil {
			return fmt.Errorf("TerminateJobObject: %w", err)
		}
		return nil
	})
}

// WaitEmpty returns nil once the job's accounting reports no active
// process. It sleeps on the job's completion port, so it wakes as soon as
// the kernel reports a process exit or JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO,
// but a message is only ever a reason to look again: the answer is the
// accounting read, taken again at least every 250 ms because job
// notifications may be lost. It returns the context's error (wrapped, with
// the count still active) when ctx ends first, and ErrJobClosed if the job
// is closed meanwhile. Concurrent WaitEmpty calls on one job work but may
// steal each other's wake-ups and then react up to 250 ms later.
func (j *Job) WaitEmpty(ctx context.Context) error {
	return j.use(func() error {
		stop := afterFunc(ctx, func() { _ = windows.PostQueuedCompletionStatus(j.port, 0, keyWake, nil) })
		defer stop()
		for {
			n, err := j.activeProcesses()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("job still has %d active processes: %w", n, err)
			}
			if j.closing.Load() {
				return ErrJobClosed
			}
			var qty uint32
			var key uintptr
			var ov *windows.Overlapped
			err = windows.GetQueuedCompletionStatus(j.port, &qty, &key, &ov, waitEmptyRecheckMillis)
			if err != nil && err != windows.WAIT_TIMEOUT {
				return fmt.Errorf("wait on job completion port: %w", err)
			}
			if err == nil && key == keyJob {
				j.hits.Or(limitHit(qty))
			}
		}
	})
}

// Close closes the job's handles. If no other handle to the job exists, the
// kernel kills every process still in it (KILL_ON_JOB_CLOSE). A WaitEmpty in
// progress returns ErrJobClosed. Close is idempotent.
func (j *Job) Close() error {
	if !j.closing.CompareAndSwap(false, true) {
		return nil
	}
	// Wake a waiter so it sees closing and releases the read lock.
	_ = windows.PostQueuedCompletionStatus(j.port, 0, keyWake, nil)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	err := windows.CloseHandle(j.h)
	if perr := windows.CloseHandle(j.port); err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("close job: %w", err)
	}
	return nil
}

// ProcSpec describes a process for Job.Start.
type ProcSpec struct {
	// Argv[0] is the executable's path, used as is (no PATH search, the
	// extension included); the command line is Argv quoted by the rules
	// of CommandLineToArgvW (windows.ComposeCommandLine).
	Argv []string
	// Env is the environment; nil inherits ours. SYSTEMROOT is added if
	// missing, as os/exec does, because Winsock fails without it.
	Env []string
	// Dir is the working directory; "" inherits ours.
	Dir string
	// Stdin, Stdout, Stderr; nil means the NUL device.
	Stdin, Stdout, Stderr *os.File
	// Inherit are extra handles the child inherits with the same handle
	// values (f.Fd()), which the caller passes to it in Env or Argv. No
	// other handle of ours is inherited.
	Inherit []*os.File
	// NewProcessGroup starts the process as the root of a new console
	// process group (CREATE_NEW_PROCESS_GROUP) so CtrlBreak(Pid) reaches
	// it and its console descendants. Windows disables CTRL_C in such a
	// group; CTRL_BREAK still arrives.
	NewProcessGroup bool
}

// Process is a process started by Job.Start. Its handle keeps the pid from
// being reused until Close.
type Process struct {
	Pid uint32

	h       windows.Handle
	closeEv windows.Handle // set by Close to end a pending Wait
	// viaJobList says the kernel put the process in the job at creation
	// (PROC_THREAD_ATTRIBUTE_JOB_LIST) rather than Start assigning it while
	// suspended; tests check both paths.
	viaJobList bool

	mu      sync.RWMutex
	closed  bool
	closing atomic.Bool
}

// Start creates the process in the job without letting it run a single
// instruction outside: the process is created suspended, with the job in
// PROC_THREAD_ATTRIBUTE_JOB_LIST where Windows supports it (10 and later),
// else assigned with AssignProcessToJobObject while still suspended; its
// membership is then checked with IsProcessInJob and only then is its thread
// resumed. If any step fails the suspended process is terminated and Start
// returns the error.
func (j *Job) Start(s ProcSpec) (*Process, error) { return j.start(s, true) }

func (j *Job) start(s ProcSpec, useJobList bool) (*Process, error) {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errors.New("start: empty argv")
	}
	var p *Process
	err := j.use(func() error {
		var err error
		p, err = j.create(s, useJobList)
		return err
	})
	return p, err
}

// create runs Start's steps in order, with the handles guaranteed open:
// encode the spec, give the child its standard and inherited handles, build
// the attribute list that confines what it inherits (and, where supported,
// puts it in the job), create it suspended, then admit it to the job and
// resume it. What the steps borrow (duplicated handles, inherit flags,
// ForkLock, the attribute list, the thread handle) is given back when create
// returns, after the process runs or is gone.
func (j *Job) create(s ProcSpec, useJobList bool) (*Process, error) {
	l, err := encodeLaunch(s)
	if err != nil {
		return nil, err
	}
	si := new(windows.StartupInfoEx)
	si.Cb = uint32(unsafe.Sizeof(*si))
	si.Flags = windows.STARTF_USESTDHANDLES
	var std stdHandles
	defer std.close()
	if err := std.fill(&si.StartupInfo, s); err != nil {
		return nil, err
	}
	handles := []windows.Handle{si.StdInput, si.StdOutput, si.StdErr}
	for _, f := range s.Inherit {
		handles = append(handles, windows.Handle(f.Fd()))
	}
	// Each handle once (a std handle may also be inherited); order does not
	// matter to the list.
	slices.Sort(handles)
	handles = slices.Compact(handles)

	// Go's os/exec passes an explicit handle list too, so nothing else can
	// pick up the inherit flags set below meanwhile; ForkLock orders us with
	// it anyway, until they are restored.
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	restore, err := inheritable(s)
	if err != nil {
		return nil, err
	}
	defer restore()

	attrs, viaJobList, err := j.attributes(s, handles, useJobList)
	if err != nil {
		return nil, err
	}
	defer attrs.Delete()
	si.ProcThreadAttributeList = attrs.List()

	pi, err := createSuspended(s, l, si)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(pi.Thread)
	return j.admit(s, pi, viaJobList)
}

// launch is a ProcSpec encoded for CreateProcess; dir and env are nil to
// inherit ours.
type launch struct {
	app, cmdline, dir, env *uint16
}

func encodeLaunch(s ProcSpec) (launch, error) {
	var l launch
	var err error
	if l.app, err = windows.UTF16PtrFromString(s.Argv[0]); err != nil {
		return l, fmt.Errorf("start %q: %w", s.Argv[0], err)
	}
	if l.cmdline, err = windows.UTF16PtrFromString(windows.ComposeCommandLine(s.Argv)); err != nil {
		return l, fmt.Errorf("start %q: command line: %w", s.Argv[0], err)
	}
	if s.Dir != "" {
		if l.dir, err = windows.UTF16PtrFromString(s.Dir); err != nil {
			return l, fmt.Errorf("start %q: dir: %w", s.Argv[0], err)
		}
	}
	if s.Env != nil {
		if l.env, err = envBlock(s.Env); err != nil {
			return l, fmt.Errorf("start %q: %w", s.Argv[0], err)
		}
	}
	return l, nil
}

// stdHandles are the child's standard handles: inheritable duplicates of
// ours (their values in the child do not matter: STARTUPINFO names them), or
// one inheritable handle to NUL for any not given, all closed by close once
// the child has been created.
type stdHandles struct {
	temps []windows.Handle
	nul   windows.Handle
}

// fill sets si's standard handles for s.
func (t *stdHandles) fill(si *windows.StartupInfo, s ProcSpec) error {
	var err error
	if si.StdInput, err = t.handle(s.Stdin); err != nil {
		return err
	}
	if si.StdOutput, err = t.handle(s.Stdout); err != nil {
		return err
	}
	si.StdErr, err = t.handle(s.Stderr)
	return err
}

func (t *stdHandles) handle(f *os.File) (windows.Handle, error) {
	if f == nil {
		return t.null()
	}
	cur := windows.CurrentProcess()
	var d windows.Handle
	if err := windows.DuplicateHandle(cur, windows.Handle(f.Fd()), cur, &d, 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return 0, fmt.Errorf("duplicate %s: %w", f.Name(), err)
	}
	t.temps = append(t.temps, d)
	return d, nil
}

// null opens NUL once, however many standard handles it stands for.
func (t *stdHandles) null() (windows.Handle, error) {
	if t.nul != 0 {
		return t.nul, nil
	}
	path, _ := windows.UTF16PtrFromString("NUL")
	sa := &windows.SecurityAttributes{InheritHandle: 1}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	h, err := windows.CreateFile(path, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, sa, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("open NUL: %w", err)
	}
	t.nul = h
	t.temps = append(t.temps, h)
	return h, nil
}

func (t *stdHandles) close() {
	for _, h := range t.temps {
		_ = windows.CloseHandle(h)
	}
}

// inheritable switches on the inherit flag of s.Inherit's handles that lack
// it, because an inherited handle keeps its value in the child only if it is
// inheritable; restore switches those flags off again, last set first. On an
// error the flags already set are restored before it returns. The caller
// holds ForkLock from before inheritable until after restore.
func inheritable(s ProcSpec) (restore func(), err error) {
	var set []windows.Handle
	restore = func() {
		for i := len(set) - 1; i >= 0; i-- {
			_ = windows.SetHandleInformation(set[i], windows.HANDLE_FLAG_INHERIT, 0)
		}
	}
	for _, f := range s.Inherit {
		h := windows.Handle(f.Fd())
		flags, err := getHandleInformation(h)
		if err != nil {
			restore()
			return nil, fmt.Errorf("start %q: inherit %s: %w", s.Argv[0], f.Name(), err)
		}
		if flags&windows.HANDLE_FLAG_INHERIT == 0 {
			if err := windows.SetHandleInformation(h, windows.HANDLE_FLAG_INHERIT, windows.HANDLE_FLAG_INHERIT); err != nil {
				restore()
				return nil, fmt.Errorf("start %q: inherit %s: %w", s.Argv[0], f.Name(), err)
			}
			set = append(set, h)
		}
	}
	return restore, nil
}

// attributes builds the attribute list that limits what the child inherits
// to handles and, where Windows takes it, has the kernel create the child in
// the job (viaJobList); the caller deletes it after CreateProcess.
func (j *Job) attributes(s ProcSpec, handles []windows.Handle, useJobList bool) (attrs *windows.ProcThreadAttributeListContainer, viaJobList bool, err error) {
	attrs, err = windows.NewProcThreadAttributeList(2)
	if err != nil {
		return nil, false, fmt.Errorf("start %q: %w", s.Argv[0], err)
	}
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
		unsafe.Pointer(&handles[0]), uintptr(len(handles))*unsafe.Sizeof(handles[0])); err != nil {
		attrs.Delete()
		return nil, false, fmt.Errorf("start %q: handle list: %w", s.Argv[0], err)
	}
	if useJobList {
		// Refused before Windows 10; the suspended assignment in admit
		// covers that case just as safely. The list keeps jobs alive.
		jobs := []windows.Handle{j.h}
		viaJobList = attrs.Update(procThreadAttributeJobList, unsafe.Pointer(&jobs[0]), unsafe.Sizeof(jobs[0])) == nil
	}
	return attrs, viaJobList, nil
}

// createSuspended creates the process with its thread suspended, so it runs
// no instruction before admit has made sure it is in the job.
func createSuspended(s ProcSpec, l launch, si *windows.StartupInfoEx) (windows.ProcessInformation, error) {
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT)
	if s.NewProcessGroup {
		flags |= windows.CREATE_NEW_PROCESS_GROUP
	}
	var pi windows.ProcessInformation
	if err := windows.CreateProcess(l.app, l.cmdline, nil, nil, true, flags, l.env, l.dir, &si.StartupInfo, &pi); err != nil {
		return pi, fmt.Errorf("CreateProcess %q: %w", s.Argv[0], err)
	}
	return pi, nil
}

// admit makes sure the suspended process is in the job, assigning it there
// if the job list did not put it in, and only then resumes it. Until then it
// has not run, so on any failure it is killed and waited for before the
// error is returned: nothing of it escapes the job.
func (j *Job) admit(s ProcSpec, pi windows.ProcessInformation, viaJobList bool) (*Process, error) {
	fail := func(err error) (*Process, error) {
		_ = windows.TerminateProcess(pi.Process, 1)
		_, _ = windows.WaitForSingleObject(pi.Process, 10_000)
		_ = windows.CloseHandle(pi.Process)
		return nil, fmt.Errorf("start %q: %w", s.Argv[0], err)
	}
	assigned, err := j.join(pi.Process)
	if err != nil {
		return fail(err)
	}
	closeEv, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return fail(fmt.Errorf("CreateEvent: %w", err))
	}
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		_ = windows.CloseHandle(closeEv)
		return fail(fmt.Errorf("ResumeThread: %w", err))
	}
	return &Process{Pid: pi.ProcessId, h: pi.Process, closeEv: closeEv, viaJobList: viaJobList && !assigned}, nil
}

// join puts a suspended process in the job unless the job list already did,
// and then checks that it is there, whatever AssignProcessToJobObject said.
// assigned reports that the job list had not put it there.
func (j *Job) join(process windows.Handle) (assigned bool, err error) {
	in, err := isProcessInJob(process, j.h)
	if err != nil || in {
		return false, err
	}
	if err := windows.AssignProcessToJobObject(j.h, process); err != nil {
		return true, fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	if in, err = isProcessInJob(process, j.h); err != nil {
		return true, err
	}
	if !in {
		return true, errors.New("process is not in the job after AssignProcessToJobObject")
	}
	return true, nil
}

// envBlock encodes env as a CREATE_UNICODE_ENVIRONMENT block.
func envBlock(env []string) (*uint16, error) {
	hasRoot := false
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		hasRoot = hasRoot || strings.EqualFold(k, "SYSTEMROOT")
	}
	if !hasRoot {
		if v, ok := os.LookupEnv("SYSTEMROOT"); ok {
			env = append(env[:len(env):len(env)], "SYSTEMROOT="+v)
		}
	}
	var b []uint16
	for _, kv := range env {
		u, err := windows.UTF16FromString(kv)
		if err != nil {
			return nil, fmt.Errorf("environment entry %q: %w", kv, err)
		}
		b = append(b, u...)
	}
	if len(b) == 0 {
		b = append(b, 0)
	}
	b = append(b, 0)
	return &b[0], nil
}

// Wait waits for the process to exit and returns its exit code (for a
// process killed by Terminate, the code given there). It returns the
// context's error if ctx ends first and ErrProcessClosed if Close is called
// meanwhile.
func (p *Process) Wait(ctx context.Context) (uint32, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return 0, ErrProcessClosed
	}
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return 0, fmt.Errorf("CreateEvent: %w", err)
	}
	defer windows.CloseHandle(ev)
	stop := afterFunc(ctx, func() { _ = windows.SetEvent(ev) })
	defer stop()
	r, err := windows.WaitForMultipleObjects([]windows.Handle{p.h, ev, p.closeEv}, false, windows.INFINITE)
	if err != nil {
		return 0, fmt.Errorf("wait for process %d: %w", p.Pid, err)
	}
	switch r {
	case windows.WAIT_OBJECT_0:
		var code uint32
		if err := windows.GetExitCodeProcess(p.h, &code); err != nil {
			return 0, fmt.Errorf("exit code of process %d: %w", p.Pid, err)
		}
		return code, nil
	case windows.WAIT_OBJECT_0 + 1:
		return 0, ctx.Err()
	default:
		return 0, ErrProcessClosed
	}
}

// Close releases the process handle (it does not kill the process). A Wait
// in progress returns ErrProcessClosed. Close is idempotent.
func (p *Process) Close() error {
	if !p.closing.CompareAndSwap(false, true) {
		return nil
	}
	_ = windows.SetEvent(p.closeEv)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	err := windows.CloseHandle(p.h)
	if cerr := windows.CloseHandle(p.closeEv); err == nil {
		err = cerr
	}
	return err
}

// CtrlBreak sends CTRL_BREAK_EVENT to the console process group whose root
// has pid processGroupID (a process started with NewProcessGroup). It
// reaches only processes attached to our console, so it is the graceful
// step, never the guarantee.
func CtrlBreak(processGroupID uint32) error {
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, processGroupID); err != nil {
		return fmt.Errorf("GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, %d): %w", processGroupID, err)
	}
	return nil
}

// InOuterJob reports whether this process already runs inside a job (CI
// runners, RunAs, Task Scheduler do that) and whether jobs can nest here, so
// that our job can still be created inside it: Windows 8 (6.2) and later
// nest jobs; before that a process in a job could join no other.
func InOuterJob() (inJob bool, nestingOK bool, err error) {
	inJob, err = isProcessInJob(windows.CurrentProcess(), 0)
	if err != nil {
		return false, false, err
	}
	v := windows.RtlGetVersion()
	nests := v.MajorVersion > 6 || (v.MajorVersion == 6 && v.MinorVersion >= 2)
	return inJob, !inJob || nests, nil
}

// afterFunc runs f when ctx ends, like context.AfterFunc, but its stop waits
// for an f that has already started, so f never touches a handle the caller
// closes after stop returns.
func afterFunc(ctx context.Context, f func()) (stop func()) {
	done := make(chan struct{})
	s := context.AfterFunc(ctx, func() {
		defer close(done)
		f()
	})
	return func() {
		if !s() {
			<-done
		}
	}
}
