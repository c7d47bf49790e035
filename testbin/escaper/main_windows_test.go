package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// These tests run escaper for real (under Wine in CI) inside a job object
// from the platform package, the way the supervisor runs a worker. The test
// binary is escaper: with asEscaperEnv set, TestMain runs main() instead of
// the tests, and the processes escaper spawns (re-executions of
// os.Executable, which inherit the environment) do the same.
const asEscaperEnv = "OCTOSTORE_ESCAPER_TEST_AS_MAIN"

// long bounds every wait for something that must happen.
const long = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(asEscaperEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type run struct {
	job    *platform.Job
	proc   *platform.Process
	stderr *os.File // read after exit
}

// startInJob starts escaper with ESCAPER_ARGS=args as the first process of
// a new job, stderr to a file. The job is closed (killing what is left) when
// the test ends, after the test's own proof that it is empty.
func startInJob(t *testing.T, args string, newGroup bool) *run {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	job, err := platform.NewJob(platform.JobLimits{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = job.Close() })
	errf, err := os.CreateTemp("", "escaper-stderr")
	require.NoError(t, err)
	t.Cleanup(func() { _ = errf.Close(); _ = os.Remove(errf.Name()) })
	p, err := job.Start(platform.ProcSpec{
		Argv:            []string{exe},
		Env:             append(os.Environ(), asEscaperEnv+"=1", "ESCAPER_ARGS="+args),
		Stderr:          errf,
		NewProcessGroup: newGroup,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return &run{job: job, proc: p, stderr: errf}
}

func (r *run) wait(t *testing.T) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := r.proc.Wait(ctx)
	require.NoError(t, err)
	return code
}

func (r *run) stderrText(t *testing.T) string {
	b, err := os.ReadFile(r.stderr.Name())
	require.NoError(t, err)
	return string(b)
}

// tempDir stands in for t.TempDir, whose cleanup fails under Wine 8 (Go's
// RemoveAll uses a file-information class Wine lacks); the files are removed
// one by one instead.
func tempDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "escaper")
	require.NoError(t, err)
	t.Cleanup(func() {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			_ = os.Remove(filepath.Join(d, e.Name()))
		}
		require.NoError(t, os.Remove(d))
	})
	return d
}

// alive reports whether the recorded process still runs: its pid opens, it
// is the same process (creation time), and it has not exited.
func alive(t *testing.T, e proctest.Record) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(e.Pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	start, err := platform.ProcessStartTime(uint32(e.Pid))
	if err != nil || start != e.Start {
		return false
	}
	ev, err := windows.WaitForSingleObject(h, 0)
	require.NoError(t, err)
	return ev == uint32(windows.WAIT_TIMEOUT)
}

// teardown kills the job, proves it empty by its accounting and proves every
// recorded process gone.
func teardown(t *testing.T, r *run, recs map[string][]proctest.Record) {
	t.Helper()
	require.NoError(t, r.job.Terminate(1))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	require.NoError(t, r.job.WaitEmpty(ctx))
	for role, es := range recs {
		for _, e := range es {
			require.False(t, alive(t, e), "%s %v survived the job", role, e)
		}
	}
}

func requireInJob(t *testing.T, r *run, es ...proctest.Record) {
	t.Helper()
	pids, err := r.job.PIDs()
	require.NoError(t, err)
	for _, e := range es {
		require.Contains(t, pids, uint32(e.Pid), "%v is not in the job", e)
	}
}

// A DETACHED_PROCESS grandchild whose parent exits stays in the job, and
// dies with it.
func TestDetachedGrandchildStaysInJob(t *testing.T) {
	dir := tempDir(t)
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "marker")
	r := startInJob(t, "--pidfile "+pf+" --detached --marker "+marker, false)
	by := waitRoles(t, pf, map[string]int{"worker": 1, "detacher": 1, "detached": 1})
	proctest.WaitFor(t, long, "detacher exit", func() bool { return !alive(t, by["detacher"][0]) })
	require.True(t, alive(t, by["detached"][0]))
	requireInJob(t, r, by["worker"][0], by["detached"][0])
	n, err := r.job.ActiveProcesses()
	require.NoError(t, err)
	require.Equal(t, uint32(2), n, "worker and detached grandchild")
	proctest.WaitFor(t, long, "markers", func() bool {
		_, e1 := os.Stat(marker)
		_, e2 := os.Stat(marker + ".detached")
		return e1 == nil && e2 == nil
	})
	teardown(t, r, by)
}

// --orphan, --new-group and --storm together: every process, whatever its
// parent or console group, is in the job and counted.
func TestOrphanNewGroupStorm(t *testing.T) {
	dir := tempDir(t)
	pf := filepath.Join(dir, "pids")
	r := startInJob(t, "--pidfile "+pf+" --orphan --new-group --storm 20", false)
	by := waitRoles(t, pf, map[string]int{"worker": 1, "orphaner": 1, "orphan": 1, "newgroup": 1, "storm": 20})
	proctest.WaitFor(t, long, "orphaner exit", func() bool { return !alive(t, by["orphaner"][0]) })
	requireInJob(t, r, append(append(by["orphan"], by["newgroup"]...), by["storm"]...)...)
	proctest.WaitFor(t, long, "23 active processes", func() bool {
		n, err := r.job.ActiveProcesses()
		require.NoError(t, err)
		return n == 23 // worker, orphan, newgroup, 20 storm
	})
	teardown(t, r, by)
}

// CREATE_BREAKAWAY_FROM_JOB is refused in a job without BREAKAWAY_OK, and
// escaper says so with exit 75.
func TestBreakawayRefused(t *testing.T) {
	dir := tempDir(t)
	pf, logf := filepath.Join(dir, "pids"), filepath.Join(dir, "log")
	r := startInJob(t, "--pidfile "+pf+" --log "+logf+" --breakaway", false)
	require.Equal(t, uint32(exitBreakawayRefused), r.wait(t), "stderr: %s", r.stderrText(t))
	require.Contains(t, r.stderrText(t), "escaper: breakaway refused: ")
	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	require.Contains(t, string(b), "breakaway refused: ")
	for _, e := range records(t, pf) {
		require.NotEqual(t, "breakaway", e.Role, "a breakaway child recorded itself")
	}
	teardown(t, r, nil)
}

// --ignore-console survives CTRL_BREAK; --term-exits stops on it.
func TestConsoleEvents(t *testing.T) {
	dir := tempDir(t)
	pf, logf := filepath.Join(dir, "pids"), filepath.Join(dir, "log")
	ign := startInJob(t, "--pidfile "+pf+" --ignore-console --child", true)
	by := waitRoles(t, pf, map[string]int{"worker": 1, "child": 1})
	err := platform.CtrlBreak(ign.proc.Pid)
	if v, wine := platform.WineVersion(); wine && err != nil {
		teardown(t, ign, by)
		t.Skipf("Wine %s cannot deliver console control events (%v), so neither ignoring nor obeying them can be observed", v, err)
	}
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // give a wrongly handled event time to kill
	require.True(t, alive(t, by["worker"][0]) && alive(t, by["child"][0]), "CTRL_BREAK was not ignored")
	teardown(t, ign, by)

	term := startInJob(t, "--log "+logf+" --term-exits", true)
	proctest.WaitFor(t, long, "started line", func() bool {
		b, _ := os.ReadFile(logf)
		return bytes.Contains(b, []byte("started "))
	})
	require.NoError(t, platform.CtrlBreak(term.proc.Pid))
	require.Zero(t, term.wait(t))
	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	require.Contains(t, string(b), fmt.Sprintf("stopped %d", term.proc.Pid))
	teardown(t, term, nil)
}

// The Unix-only modes are refused on Windows with exit 64 and one line.
func TestUnixModesRefused(t *testing.T) {
	for _, f := range []string{"--setsid", "--grandchild-setsid", "--ignore-signals", "--zombies 1", "--light-tree 1", "--migrate-cgroup --migrate-log x"} {
		t.Run(strings.Fields(f)[0], func(t *testing.T) {
			r := startInJob(t, f, false)
			require.Equal(t, uint32(exitUsage), r.wait(t))
			msg := r.stderrText(t)
			require.True(t, strings.HasPrefix(msg, "escaper: ") && strings.Count(msg, "\n") == 1, "stderr %q", msg)
			teardown(t, r, nil)
		})
	}
}
