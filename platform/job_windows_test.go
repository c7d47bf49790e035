package platform

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// The test binary doubles as the child program of these tests: with
// helperEnv set, TestMain runs the named helper instead of the tests.
// os.Executable is a Windows path under Wine too, so re-executing works
// there.
const (
	helperEnv       = "OCTOSTORE_PLATFORM_JOB_HELPER"
	helperHandleEnv = "OCTOSTORE_PLATFORM_JOB_HANDLE"
	// exit codes of the helpers
	helperInJob       = 0
	helperNotInJob    = 3
	helperError       = 4
	helperBrokeAway   = 5
	helperInterrupted = 42
	helperTimedOut    = 9
)

// long bounds every wait for something that must happen: generous, because
// Wine on a busy 2-core machine starts a process in tens to hundreds of ms.
const long = 60 * time.Second

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	switch mode {
	case "sleep":
		// Bounded so that a helper leaked by a broken test still ends; the
		// tests kill it long before.
		time.Sleep(10 * time.Minute)
		return helperTimedOut
	case "injob":
		// Asks the kernel whether this process is in the job whose handle
		// the parent let it inherit: the first thing the helper does.
		v, err := strconv.ParseUint(os.Getenv(helperHandleEnv), 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "injob: bad handle:", err)
			return helperError
		}
		in, err := isProcessInJob(windows.CurrentProcess(), windows.Handle(v))
		if err != nil {
			fmt.Fprintln(os.Stderr, "injob:", err)
			return helperError
		}
		if in {
			return helperInJob
		}
		return helperNotInJob
	case "breakaway":
		// Tries to leave the job the only way a child can ask for it.
		cmd := helperCmd("sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_BREAKAWAY_FROM_JOB}
		if err := cmd.Start(); err != nil {
			fmt.Println("refused:", err)
			return 0
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		fmt.Println("escaped: pid", cmd.Process.Pid)
		return helperBrokeAway
	case "detached":
		// A grandchild without a console whose parent exits at once: the
		// classic way to outlive a worker.
		cmd := helperCmd("sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.DETACHED_PROCESS}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "detached:", err)
			return helperError
		}
		fmt.Println(cmd.Process.Pid)
		return 0
	case "interrupt":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		fmt.Println("ready")
		select {
		case <-ch:
			return helperInterrupted
		case <-time.After(long):
			return helperTimedOut
		}
	case "echo":
		// Reports what it was started with, and writes to the inherited
		// handle if it got one.
		wd, _ := os.Getwd()
		out := map[string]any{"args": os.Args[1:], "dir": wd, "env": os.Getenv("OCTOSTORE_PLATFORM_JOB_ECHO")}
		if v := os.Getenv(helperHandleEnv); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return helperError
			}
			f := os.NewFile(uintptr(n), "inherited")
			if _, err := f.WriteString("via inherited handle\n"); err != nil {
				fmt.Fprintln(os.Stderr, "echo:", err)
				return helperError
			}
			_ = f.Close()
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			return helperError
		}
		return 0
	case "outer":
		in, nest, err := InOuterJob()
		if err != nil {
			fmt.Fprintln(os.Stderr, "outer:", err)
			return helperError
		}
		fmt.Println(in, nest)
		return 0
	}
	if code, ok := limitHelper(mode); ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
	return helperError
}

func selfExe(t testing.TB) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

// helperCmd is the helper started the ordinary way (used inside helpers).
func helperCmd(mode string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	return cmd
}

func helperSpec(t testing.TB, mode string, extraEnv ...string) ProcSpec {
	return ProcSpec{
		Argv: []string{selfExe(t)},
		Env:  append(append(os.Environ(), helperEnv+"="+mode), extraEnv...),
	}
}

// newJob returns a job that is closed (killing what is left) when the test
// ends, after the test's own checks.
func newJob(t testing.TB, l JobLimits) *Job {
	j, err := NewJob(l)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func start(t testing.TB, j *Job, s ProcSpec) *Process {
	p, err := j.Start(s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// openProcess opens a process we did not start directly (a grandchild) so
// its pid stays reserved and its exit can be waited for. Wine's
// IsProcessInJob wants PROCESS_QUERY_INFORMATION, not the limited right.
func openProcess(t testing.TB, pid uint32) windows.Handle {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_INFORMATION, false, pid)
	require.NoError(t, err, "open process %d", pid)
	t.Cleanup(func() { _ = windows.CloseHandle(h) })
	return h
}

// requireExited proves a process is gone (its handle is signalled) within
// the generous bound and returns its exit code.
func requireExited(t testing.TB, h windows.Handle, what string) uint32 {
	t.Helper()
	ev, err := windows.WaitForSingleObject(h, uint32(long/time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev, "%s still running after %v", what, long)
	var code uint32
	require.NoError(t, windows.GetExitCodeProcess(h, &code))
	return code
}

// requireJobEmpty is the end-of-test proof that nothing the test started in
// j is alive: the kernel's accounting says no active process and the
// process list is empty.
func requireJobEmpty(t testing.TB, j *Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	require.NoError(t, j.WaitEmpty(ctx))
	n, err := j.ActiveProcesses()
	require.NoError(t, err)
	require.Zero(t, n)
	pids, err := j.PIDs()
	require.NoError(t, err)
	require.Empty(t, pids)
}

// tempDir replaces t.TempDir, whose cleanup fails under Wine 8: Go 1.26's
// RemoveAll deletes through NtSetInformationFile classes Wine does not
// implement ("Invalid function"), while plain os.Remove works. The tests
// here leave at most empty directories.
func tempDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "platformjob")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.Remove(d)) })
	return d
}

func readLine(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := r.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return strings.TrimSpace(r.s)
	case <-time.After(long):
		t.Fatalf("no line from the child within %v", long)
		return ""
	}
}

// pipe returns the read end for the test and the write end to hand to a
// child; the test's copy of the write end is closed after Start by closeW.
func pipe(t testing.TB) (r *bufio.Reader, w *os.File, closeW func()) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = pr.Close(); _ = pw.Close() })
	return bufio.NewReader(pr), pw, func() { _ = pw.Close() }
}

func TestCheckLimits(t *testing.T) {
	limits := func(flags, active uint32) windows.JOBOBJECT_BASIC_LIMIT_INFORMATION {
		var b windows.JOBOBJECT_BASIC_LIMIT_INFORMATION
		b.LimitFlags, b.ActiveProcessLimit = flags, active
		return b
	}
	const kill, brk, silent, act = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK,
		windows.JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK, windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
	for _, tc := range []struct {
		name     string
		got      windows.JOBOBJECT_BASIC_LIMIT_INFORMATION
		l        JobLimits
		wine     bool
		verified bool
		errText  string
	}{
		{name: "exact", got: limits(kill, 0), verified: true},
		{name: "exact with limit", got: limits(kill|act, 7), l: JobLimits{MaxProcesses: 7}, verified: true},
		{name: "exact under a Wine that reports limits", got: limits(kill, 0), wine: true, verified: true},
		{name: "kill on close lost", got: limits(0, 0), errText: "KILL_ON_JOB_CLOSE is off"},
		{name: "breakaway allowed", got: limits(kill|brk, 0), errText: "BREAKAWAY_OK is on"},
		{name: "silent breakaway", got: limits(kill|silent, 0), errText: "SILENT_BREAKAWAY_OK is on"},
		{name: "foreign flag", got: limits(kill|windows.JOB_OBJECT_LIMIT_JOB_TIME, 0), errText: "unexpected limit flags 0x4"},
		{name: "exact with memory limit", got: limits(kill|windows.JOB_OBJECT_LIMIT_JOB_MEMORY, 0), l: JobLimits{MemoryMax: 1 << 20}, verified: true},
		{name: "memory limit not asked for", got: limits(kill|windows.JOB_OBJECT_LIMIT_JOB_MEMORY, 0), errText: "JOB_MEMORY is on"},
		{name: "memory limit missing", got: limits(kill, 0), l: JobLimits{MemoryMax: 1 << 20}, errText: "JOB_MEMORY is off"},
		{name: "Wine cannot limit memory", got: limits(0, 0), wine: true, l: JobLimits{MemoryMax: 1 << 20}, errText: "Wine keeps no job memory limit"},
		{name: "limit missing", got: limits(kill, 0), l: JobLimits{MaxProcesses: 3}, errText: "ACTIVE_PROCESS is off"},
		{name: "limit differs", got: limits(kill|act, 4), l: JobLimits{MaxProcesses: 3}, errText: "active-process limit is 4, not 3"},
		{name: "Wine zero record", got: limits(0, 0), wine: true, verified: false},
		{name: "Wine cannot limit", got: limits(0, 0), wine: true, l: JobLimits{MaxProcesses: 3}, errText: "Wine keeps no active-process limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verified, err := checkLimits(tc.got, tc.l, tc.wine)
			if tc.errText != "" {
				require.ErrorIs(t, err, ErrJobLimits)
				require.ErrorContains(t, err, tc.errText)
				require.False(t, verified)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.verified, verified)
		})
	}
}

func TestNewJobLimitsReadBack(t *testing.T) {
	j := newJob(t, JobLimits{})
	var back windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	require.NoError(t, windows.QueryInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&back)), uint32(unsafe.Sizeof(back)), nil))
	if v, wine := WineVersion(); wine {
		// Wine zero-fills every limit query; the limits' effects are
		// proven by TestBreakawayRefused and TestCloseKillsJob instead.
		require.False(t, j.LimitsVerified(), "Wine %s", v)
		require.Zero(t, back.BasicLimitInformation.LimitFlags, "Wine %s now reports job limits: drop the Wine exception in checkLimits", v)
		return
	}
	require.True(t, j.LimitsVerified())
	f := back.BasicLimitInformation.LimitFlags
	require.NotZero(t, f&windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE)
	require.Zero(t, f&(windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK|windows.JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK))
	require.Zero(t, f&windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS)
}

func TestBornInJob(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jobList bool
	}{{"job-list attribute", true}, {"suspended then assigned", false}} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, JobLimits{})
			// The helper gets a query-only handle to the job so it can ask
			// IsProcessInJob about exactly this job, not just "any job".
			var dup windows.Handle
			cur := windows.CurrentProcess()
			require.NoError(t, windows.DuplicateHandle(cur, j.h, cur, &dup, jobObjectQuery, false, 0))
			hf := os.NewFile(uintptr(dup), "job")
			t.Cleanup(func() { _ = hf.Close() })
			s := helperSpec(t, "injob", helperHandleEnv+"="+strconv.FormatUint(uint64(dup), 10))
			s.Inherit = []*os.File{hf}
			p, err := j.start(s, tc.jobList)
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			if tc.jobList {
				t.Logf("kernel put the process in the job at creation: %v", p.viaJobList)
			} else {
				require.False(t, p.viaJobList)
			}
			ctx, cancel := context.WithTimeout(context.Background(), long)
			defer cancel()
			code, err := p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, uint32(helperInJob), code, "helper exit code (3: not in the job, 4: error)")
			requireJobEmpty(t, j)
		})
	}
}

func TestStartSpec(t *testing.T) {
	j := newJob(t, JobLimits{})
	out, outW, closeOut := pipe(t)
	inh, inhW, closeInh := pipe(t)
	dir := tempDir(t)
	args := []string{`plain`, `with space`, `quote"inside`, `trailing\`, `back\\slash "q"`, ``}
	s := helperSpec(t, "echo", "OCTOSTORE_PLATFORM_JOB_ECHO=value with spaces",
		helperHandleEnv+"="+strconv.FormatUint(uint64(inhW.Fd()), 10))
	s.Argv = append(s.Argv, args...)
	s.Dir = dir
	s.Stdout = outW
	s.Inherit = []*os.File{inhW}
	// os.Pipe makes inheritable handles on Windows; make this one private,
	// as a careful caller would, to see Start hand it over all the same
	// and leave it private.
	require.NoError(t, windows.SetHandleInformation(windows.Handle(inhW.Fd()), windows.HANDLE_FLAG_INHERIT, 0))
	p := start(t, j, s)
	// The inherit flag was switched on only for the CreateProcess.
	flags, err := getHandleInformation(windows.Handle(inhW.Fd()))
	require.NoError(t, err)
	require.Zero(t, flags&windows.HANDLE_FLAG_INHERIT)
	closeOut()
	closeInh()

	require.Equal(t, "via inherited handle", readLine(t, inh))
	var got struct {
		Args []string
		Dir  string
		Env  string
	}
	require.NoError(t, json.Unmarshal([]byte(readLine(t, out)), &got))
	require.Equal(t, args, got.Args)
	require.Equal(t, strings.ToLower(dir), strings.ToLower(got.Dir))
	require.Equal(t, "value with spaces", got.Env)

	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Zero(t, code)
	requireJobEmpty(t, j)
}

func TestStartFailures(t *testing.T) {
	j := newJob(t, JobLimits{})
	_, err := j.Start(ProcSpec{})
	require.Error(t, err)
	_, err = j.Start(ProcSpec{Argv: []string{`C:\does\not\exist.exe`}})
	require.Error(t, err)
	_, err = j.Start(ProcSpec{Argv: []string{tempDir(t)}})
	require.Error(t, err, "a directory is not an executable")
	requireJobEmpty(t, j)
}

func TestBreakawayRefused(t *testing.T) {
	j := newJob(t, JobLimits{})
	out, w, closeW := pipe(t)
	s := helperSpec(t, "breakaway")
	s.Stdout = w
	p := start(t, j, s)
	closeW()
	line := readLine(t, out)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, uint32(0), code, "child said %q", line)
	require.True(t, strings.HasPrefix(line, "refused:"), line)
	requireJobEmpty(t, j)
}

func TestDetachedGrandchildStaysAndDies(t *testing.T) {
	j := newJob(t, JobLimits{})
	out, w, closeW := pipe(t)
	s := helperSpec(t, "detached")
	s.Stdout = w
	p := start(t, j, s)
	closeW()
	pid, err := strconv.ParseUint(readLine(t, out), 10, 32)
	require.NoError(t, err)
	gh := openProcess(t, uint32(pid))

	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Zero(t, code, "the parent exits 0 after starting the grandchild")

	// The parent is gone; the grandchild is still in the job and counted.
	in, err := isProcessInJob(gh, j.h)
	require.NoError(t, err)
	require.True(t, in, "detached grandchild left the job")
	n, err := j.ActiveProcesses()
	require.NoError(t, err)
	require.Equal(t, uint32(1), n)
	pids, err := j.PIDs()
	require.NoError(t, err)
	require.Equal(t, []uint32{uint32(pid)}, pids)

	require.NoError(t, j.Terminate(77))
	require.Equal(t, uint32(77), requireExited(t, gh, "grandchild"))
	requireJobEmpty(t, j)
}

func TestWaitEmpty(t *testing.T) {
	j := newJob(t, JobLimits{})
	var ps []*Process
	for range 3 {
		ps = append(ps, start(t, j, helperSpec(t, "sleep")))
	}
	n, err := j.ActiveProcesses()
	require.NoError(t, err)
	require.Equal(t, uint32(3), n)

	// A non-empty job is not reported empty: WaitEmpty waits until ctx ends.
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = j.WaitEmpty(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "3 active processes")

	require.NoError(t, j.Terminate(1))
	requireJobEmpty(t, j)
	for _, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		code, err := p.Wait(ctx)
		cancel()
		require.NoError(t, err)
		require.Equal(t, uint32(1), code)
	}
}

// PIDs grows its buffer past the first 64 entries and names every member.
func TestPIDsMany(t *testing.T) {
	j := newJob(t, JobLimits{})
	want := map[uint32]bool{}
	for range 70 {
		p := start(t, j, helperSpec(t, "sleep"))
		want[p.Pid] = true
	}
	pids, err := j.PIDs()
	require.NoError(t, err)
	got := map[uint32]bool{}
	for _, p := range pids {
		got[p] = true
	}
	require.Equal(t, want, got)
	require.NoError(t, j.Terminate(1))
	requireJobEmpty(t, j)
}

func TestCloseKillsJob(t *testing.T) {
	j, err := NewJob(JobLimits{})
	require.NoError(t, err)
	sleeper := start(t, j, helperSpec(t, "sleep"))
	sh := openProcess(t, sleeper.Pid)
	out, w, closeW := pipe(t)
	s := helperSpec(t, "detached")
	s.Stdout = w
	start(t, j, s)
	closeW()
	pid, err := strconv.ParseUint(readLine(t, out), 10, 32)
	require.NoError(t, err)
	gh := openProcess(t, uint32(pid))

	// Our handle is the job's only one: closing it is what the kernel does
	// when a supervisor is killed, and it must take the job's processes
	// with it.
	require.NoError(t, j.Close())
	requireExited(t, sh, "sleeper")
	requireExited(t, gh, "detached grandchild")
	require.NoError(t, j.Close(), "Close is idempotent")
	_, err = j.ActiveProcesses()
	require.ErrorIs(t, err, ErrJobClosed)
	require.ErrorIs(t, j.WaitEmpty(context.Background()), ErrJobClosed)
}

func TestCloseWakesWaitEmpty(t *testing.T) {
	j, err := NewJob(JobLimits{})
	require.NoError(t, err)
	p := start(t, j, helperSpec(t, "sleep"))
	ph := openProcess(t, p.Pid)
	res := make(chan error, 1)
	go func() { res <- j.WaitEmpty(context.Background()) }()
	time.Sleep(100 * time.Millisecond) // let it block; correctness does not depend on it
	require.NoError(t, j.Close())
	select {
	case err := <-res:
		// Either it saw the close, or it saw the job emptied by it.
		if err != nil {
			require.ErrorIs(t, err, ErrJobClosed)
		}
	case <-time.After(long):
		t.Fatal("WaitEmpty did not return after Close")
	}
	requireExited(t, ph, "sleeper")
}

func TestProcessWaitCancelAndClose(t *testing.T) {
	j := newJob(t, JobLimits{})
	p, err := j.Start(helperSpec(t, "sleep"))
	require.NoError(t, err)
	ph := openProcess(t, p.Pid)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = p.Wait(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	res := make(chan error, 1)
	go func() {
		_, err := p.Wait(context.Background())
		res <- err
	}()
	time.Sleep(100 * time.Millisecond) // let Wait block, so Close wakes a waiter; correctness does not depend on it
	require.NoError(t, p.Close())
	select {
	case err := <-res:
		require.ErrorIs(t, err, ErrProcessClosed)
	case <-time.After(long):
		t.Fatal("Wait did not return after Close")
	}
	_, err = p.Wait(context.Background())
	require.ErrorIs(t, err, ErrProcessClosed)

	require.NoError(t, j.Terminate(1))
	requireExited(t, ph, "sleeper")
	requireJobEmpty(t, j)
}

func TestMaxProcesses(t *testing.T) {
	if v, wine := WineVersion(); wine {
		// Proven instead: NewJob refuses the limit (TestJobLimitsRefusedUnderWine).
		t.Skipf("Wine %s keeps no active-process limit on job objects (its server stores only the limit flags), so enforcement cannot be observed", v)
	}
	j := newJob(t, JobLimits{MaxProcesses: 2})
	require.True(t, j.LimitsVerified())
	start(t, j, helperSpec(t, "sleep"))
	start(t, j, helperSpec(t, "sleep"))
	_, err := j.Start(helperSpec(t, "sleep"))
	require.Error(t, err, "a third process must not start in a job limited to 2")
	n, err := j.ActiveProcesses()
	require.NoError(t, err)
	require.Equal(t, uint32(2), n)
	require.NoError(t, j.Terminate(1))
	requireJobEmpty(t, j)
}

func TestCtrlBreak(t *testing.T) {
	j := newJob(t, JobLimits{})
	out, w, closeW := pipe(t)
	s := helperSpec(t, "interrupt")
	s.Stdout = w
	s.NewProcessGroup = true
	p := start(t, j, s)
	closeW()
	require.Equal(t, "ready", readLine(t, out))
	err := CtrlBreak(p.Pid)
	if _, wine := WineVersion(); wine && err != nil {
		require.NoError(t, j.Terminate(1))
		requireJobEmpty(t, j)
		t.Skipf("Wine cannot deliver console control events to this process group: %v", err)
	}
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, uint32(helperInterrupted), code)
	requireJobEmpty(t, j)
}

func TestInOuterJob(t *testing.T) {
	in, nest, err := InOuterJob()
	require.NoError(t, err)
	t.Logf("test process: in a job %v, nesting possible %v", in, nest)
	require.True(t, nest || in, "outside a job nesting is moot, so it is reported possible")

	// Inside our job the helper must see itself in a job that nests.
	j := newJob(t, JobLimits{})
	out, w, closeW := pipe(t)
	s := helperSpec(t, "outer")
	s.Stdout = w
	p := start(t, j, s)
	closeW()
	require.Equal(t, "true true", readLine(t, out))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Zero(t, code)
	requireJobEmpty(t, j)
}

func TestWineVersion(t *testing.T) {
	v, wine := WineVersion()
	t.Logf("Wine: %v %s", wine, v)
	if wine {
		require.NotEmpty(t, v)
	}
}

// BenchmarkJobTeardown measures how long a job of N live processes takes
// from TerminateJobObject until its accounting reports it empty. Under Wine
// the figures are indicative only: Wine's server kills each process through
// a Unix signal and reaps it itself, which says nothing about Windows.
func BenchmarkJobTeardown(b *testing.B) {
	wineVersion, wine := WineVersion()
	for _, n := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("procs=%d", n), func(b *testing.B) {
			if wine {
				b.Logf("under Wine %s: indicative only, not Windows performance", wineVersion)
			}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j, err := NewJob(JobLimits{})
				require.NoError(b, err)
				for k := 0; k < n; k++ {
					p, err := j.Start(helperSpec(b, "sleep"))
					require.NoError(b, err)
					require.NoError(b, p.Close())
				}
				active, err := j.ActiveProcesses()
				require.NoError(b, err)
				require.Equal(b, uint32(n), active)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				b.StartTimer()
				t0 := time.Now()
				require.NoError(b, j.Terminate(1))
				err = j.WaitEmpty(ctx)
				total += time.Since(t0)
				b.StopTimer()
				cancel()
				require.NoError(b, err)
				require.NoError(b, j.Close())
			}
			b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(b.N), "ms/teardown")
		})
	}
}

// jobObjectQuery is JOB_OBJECT_QUERY, which x/sys/windows does not define.
const jobObjectQuery = 0x0004
