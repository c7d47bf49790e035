package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// These tests run fakehold for real (under Wine in CI) inside a job object,
// the way the supervisor runs a hold. The test binary is fakehold: with
// asMainEnv set, TestMain runs main() instead of the tests, and the
// descendant it spawns (a re-execution of os.Executable, which inherits the
// environment) does the same.
const asMainEnv = "OCTOSTORE_FAKEHOLD_TEST_AS_MAIN"

const long = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type holdRun struct {
	job  *platform.Job
	proc *platform.Process
	out  *bufio.Reader
}

// startInJob starts fakehold with args in a new job, its stdout on a pipe
// (the events pipe). The job is closed when the test ends.
func startInJob(t *testing.T, newGroup bool, args ...string) *holdRun {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	job, err := platform.NewJob(platform.JobLimits{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = job.Close() })
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = pr.Close() })
	p, err := job.Start(platform.ProcSpec{
		Argv:            append([]string{exe}, args...),
		Env:             append(os.Environ(), asMainEnv+"=1"),
		Stdout:          pw,
		NewProcessGroup: newGroup,
	})
	_ = pw.Close() // the child has its own copy; EOF must mean "all closed"
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return &holdRun{job: job, proc: p, out: bufio.NewReader(pr)}
}

// next reads one events line (or io.EOF) within the bound.
func (r *holdRun) next(t *testing.T) (map[string]any, error) {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := r.out.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			return nil, x.err
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(x.s), &m), "line %q", x.s)
		return m, nil
	case <-time.After(long):
		t.Fatalf("no events line within %v", long)
		return nil, nil
	}
}

func (r *holdRun) wait(t *testing.T) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	code, err := r.proc.Wait(ctx)
	require.NoError(t, err)
	return code
}

// teardown kills the job and proves it empty, and every recorded process
// gone.
func teardown(t *testing.T, r *holdRun, recs []proctest.Record) {
	t.Helper()
	require.NoError(t, r.job.Terminate(1))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	require.NoError(t, r.job.WaitEmpty(ctx))
	for _, e := range recs {
		require.False(t, alive(t, e), "%v survived the job", e)
	}
}

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

// tempDir stands in for t.TempDir, whose cleanup fails under Wine 8.
func tempDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "fakehold")
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

// Events carry the continuous clock (GetTickCount64 on Windows) and the
// scripted exit code comes through.
func TestEmitAndExit(t *testing.T) {
	r := startInJob(t, false, "emit:leader,budget=5000", "exit:3")
	ev, err := r.next(t)
	require.NoError(t, err)
	require.Equal(t, "leader", ev["event"])
	require.EqualValues(t, 5000, ev["authority_remaining_ms"])
	cont, ok := ev["authority_observed_continuous_ms"].(float64)
	require.True(t, ok, "no continuous stamp in %v", ev)
	now, err := platform.ContinuousMillis()
	require.NoError(t, err)
	require.InDelta(t, float64(now), cont, float64(long.Milliseconds()))
	_, err = r.next(t)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, uint32(3), r.wait(t))
	teardown(t, r, nil)
}

// The descendant records itself with a start time that names it, writes its
// marker, never holds the events pipe (closeout gives EOF while hold and
// descendant live) and dies with the job.
func TestDescendantPidfileCloseout(t *testing.T) {
	dir := tempDir(t)
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "marker")
	r := startInJob(t, false, "--pidfile", pf, "--descendant-marker", marker, "emit:leader", "closeout")
	ev, err := r.next(t)
	require.NoError(t, err)
	require.Equal(t, "leader", ev["event"])
	_, err = r.next(t)
	require.ErrorIs(t, err, io.EOF, "closeout must end the events pipe although the descendant lives")

	var recs []proctest.Record
	proctest.WaitFor(t, long, "two pidfile lines", func() bool {
		recs, err = proctest.ReadPidfile(pf)
		require.NoError(t, err)
		return len(recs) == 2
	})
	pids, err := r.job.PIDs()
	require.NoError(t, err)
	for _, e := range recs {
		require.True(t, alive(t, e), "%v is not the live recorded process", e)
		require.Contains(t, pids, uint32(e.Pid))
	}
	require.Equal(t, int(r.proc.Pid), recs[0].Pid, "the hold records itself first")
	proctest.WaitFor(t, long, "descendant marker", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	teardown(t, r, recs)
}

// CTRL_BREAK is the supervisor's TERM: released, then exit 143.
func TestCtrlBreakReleases(t *testing.T) {
	r := startInJob(t, true, "emit:leader", "forever")
	ev, err := r.next(t)
	require.NoError(t, err)
	require.Equal(t, "leader", ev["event"])
	err = platform.CtrlBreak(r.proc.Pid)
	if v, wine := platform.WineVersion(); wine && err != nil {
		teardown(t, r, nil)
		t.Skipf("Wine %s cannot deliver console control events (%v)", v, err)
	}
	require.NoError(t, err)
	ev, err = r.next(t)
	require.NoError(t, err)
	require.Equal(t, "released", ev["event"])
	require.Equal(t, uint32(143), r.wait(t))
	teardown(t, r, nil)
}
