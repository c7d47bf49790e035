package supervisor

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Windows tests run the prebuilt Windows programs (a test binary under Wine
// cannot call go build): `make test-windows` builds them into bin/windows and
// names that directory in OCTOSTORE_WIN_BIN.
var bins struct{ sup, hold, esc string }

// long bounds every wait for something that must happen: generous, because
// Wine on a busy 2-core machine starts a process in tens to hundreds of ms.
const long = 60 * time.Second

func TestMain(m *testing.M) {
	dir := os.Getenv("OCTOSTORE_WIN_BIN")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "OCTOSTORE_WIN_BIN must name the directory of the Windows binaries (make test-windows builds them into bin/windows and sets it)")
		os.Exit(2)
	}
	bins.sup = filepath.Join(dir, "octostore-supervisor.exe")
	bins.hold = filepath.Join(dir, "fakehold.exe")
	bins.esc = filepath.Join(dir, "escaper.exe")
	for _, b := range []string{bins.sup, bins.hold, bins.esc} {
		if _, err := os.Stat(b); err != nil {
			fmt.Fprintf(os.Stderr, "missing test binary: %v\n", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// wine names the Wine version when the tests run under Wine.
func wine() (string, bool) { return platform.WineVersion() }

// sc describes one supervised run.
type sc struct {
	kind   string   // election (default) or lock
	hold   []string // fakehold flags and steps
	worker string   // escaper flags, passed in ESCAPER_ARGS; "" means --term-exits
	flags  []string // supervisor flags, before the words
	env    []string // added to the supervisor's environment
}

// run is one supervisor process under test. It runs inside a job of the
// test's own (jobs nest), so the supervisor, its jobs and everything in them
// are members the test can count without trusting the supervisor: at the end
// of every test that job must be empty.
type run struct {
	t    *testing.T
	dir  string
	job  *platform.Job
	proc *platform.Process
	out  *proctest.SyncBuffer
	errb *proctest.SyncBuffer
	done chan struct{}
	code int
}

// tempDir is t.TempDir for Wine: Go 1.26's os.RemoveAll deletes through a
// file-information class Wine 8 does not implement ("Invalid function"), so
// the tree is removed entry by entry with os.Remove, deepest first.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "octostore-wt-")
	require.NoError(t, err)
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				paths = append(paths, p)
			}
			return nil
		})
		for i := len(paths) - 1; i >= 0; i-- {
			if err := os.Remove(paths[i]); err != nil {
				t.Errorf("remove test directory: %v", err)
			}
		}
	})
	return dir
}

// start runs the supervisor for s in a fresh test directory.
func start(t *testing.T, s sc) *run {
	t.Helper()
	dir := tempDir(t)
	kind := s.kind
	if kind == "" {
		kind = "election"
	}
	cand := "agent"
	if kind == "lock" {
		cand = "-"
	}
	wflags := s.worker
	if wflags == "" {
		wflags = "--term-exits"
	}
	// The worker runs with no arguments; escaper takes its flags from the
	// environment then. Paths are joined without spaces: ESCAPER_ARGS is
	// split on spaces.
	env := append(os.Environ(), fmt.Sprintf("ESCAPER_ARGS=--pidfile %s --log %s %s", filepath.Join(dir, "pids"), filepath.Join(dir, "log"), strings.ReplaceAll(wflags, "{dir}", dir)))
	env = append(env, s.env...)
	args := append([]string{kind}, s.flags...)
	args = append(args, "room", cand, bins.esc, "--", bins.hold, "--kind", kind, "--pidfile", filepath.Join(dir, "hold.pids"))
	for _, h := range s.hold {
		args = append(args, strings.ReplaceAll(h, "{dir}", dir))
	}
	return launch(t, dir, args, env)
}

// launch starts the supervisor with args inside a new job of the test's and
// registers the end-of-test proofs: the supervisor exited and the job is empty.
func launch(t *testing.T, dir string, args, env []string) *run {
	t.Helper()
	if strings.Contains(dir, " ") {
		t.Fatalf("test directory %q has a space; ESCAPER_ARGS cannot carry it", dir)
	}
	// The private state directory (survivor records, interlocks) is the run's
	// own: a shared one would make unrelated tests on the room "room" wait for
	// each other.
	env = append(env[:len(env):len(env)], "LOCALAPPDATA="+dir)
	job, err := platform.NewJob(platform.JobLimits{})
	require.NoError(t, err)
	r := &run{t: t, dir: dir, job: job, out: &proctest.SyncBuffer{}, errb: &proctest.SyncBuffer{}, done: make(chan struct{}), code: -1}
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	errR, errW, err := os.Pipe()
	require.NoError(t, err)
	copied := make(chan struct{}, 2)
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{outR, r.out}, {errR, r.errb}} {
		go func() {
			_, _ = io.Copy(c.w, c.r)
			c.r.Close()
			copied <- struct{}{}
		}()
	}
	r.proc, err = job.Start(platform.ProcSpec{Argv: append([]string{bins.sup}, args...), Env: env,
		Stdout: outW, Stderr: errW, NewProcessGroup: true})
	outW.Close()
	errW.Close()
	require.NoError(t, err)
	go func() {
		code, err := r.proc.Wait(context.Background())
		if err == nil {
			r.code = int(code)
		}
		// Everything the supervisor wrote is in the buffers once it exited
		// and its pipes reached EOF (nothing else holds their write ends
		// after the supervisor's children are gone).
		for range 2 {
			select {
			case <-copied:
			case <-time.After(long):
			}
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = job.Terminate(1)
			<-r.done
			t.Errorf("supervisor was still running at the end of the test; stderr:\n%s", r.errb.String())
		}
		r.requireJobEmpty(long)
		_ = r.proc.Close()
		_ = job.Close()
	})
	return r
}

// requireJobEmpty proves that nothing the test started is still alive: the
// test's job (the supervisor, its jobs and every process in them) reports no
// active process within limit. Survivors are named and killed.
func (r *run) requireJobEmpty(limit time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := r.job.WaitEmpty(ctx); err != nil {
		pids, _ := r.job.PIDs()
		r.t.Errorf("processes left in the test's job after %v: %v (%v)", limit, pids, err)
		_ = r.job.Terminate(1)
	}
}

// alive lists the pids in the test's job other than the supervisor.
func (r *run) aliveBesidesSupervisor() []uint32 {
	r.t.Helper()
	pids, err := r.job.PIDs()
	require.NoError(r.t, err)
	return slices.DeleteFunc(pids, func(p uint32) bool { return p == r.proc.Pid })
}

// wait returns the exit code, failing the test if the supervisor runs past limit.
func (r *run) wait(limit time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(limit):
		r.t.Fatalf("supervisor still running after %v; stdout:\n%s\nstderr:\n%s", limit, r.out.String(), r.errb.String())
		return -1
	}
}

func (r *run) stderr() string { return r.errb.String() }

// events lists the event names printed on stdout, checking every line is a
// supervisor line.
func (r *run) events() []string { r.t.Helper(); return stdoutEvents(r.t, r.out) }

// line returns the decoded stdout line for an event.
func (r *run) line(event string) map[string]any {
	r.t.Helper()
	return stdoutLine(r.t, r.out, r.errb, event)
}

// waitEvent waits until the supervisor printed event, and returns at once
// then, so the caller can look at the world as it is when the line appears.
func (r *run) waitEvent(event string, limit time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, l := range r.out.Lines() {
			if strings.Contains(l, `"event":"`+event+`"`) {
				return
			}
		}
		select {
		case <-r.done:
			// All its output is in by now: one last look.
			if strings.Contains(r.out.String(), `"event":"`+event+`"`) {
				return
			}
			r.t.Fatalf("supervisor exited %d before printing %q; stdout:\n%s\nstderr:\n%s", r.code, event, r.out.String(), r.errb.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	r.t.Fatalf("no %q within %v; stdout:\n%s\nstderr:\n%s", event, limit, r.out.String(), r.errb.String())
}

// roles reads the worker's pidfile: role -> pid.
func (r *run) roles() map[string]uint32 {
	recs, _ := proctest.ReadPidfile(filepath.Join(r.dir, "pids"))
	out := map[string]uint32{}
	for _, rec := range recs {
		out[rec.Role] = uint32(rec.Pid)
	}
	return out
}

// waitRoles waits until the worker's pidfile names every role.
func (r *run) waitRoles(roles ...string) map[string]uint32 {
	r.t.Helper()
	var got map[string]uint32
	proctest.WaitFor(r.t, long, fmt.Sprintf("roles %v in the worker's pidfile", roles), func() bool {
		got = r.roles()
		for _, role := range roles {
			if _, ok := got[role]; !ok {
				return false
			}
		}
		return true
	})
	return got
}

// inJob reports whether pid is a member of the test's job right now.
func (r *run) inJob(pid uint32) bool {
	r.t.Helper()
	pids, err := r.job.PIDs()
	require.NoError(r.t, err)
	return slices.Contains(pids, pid)
}

// kill ends the supervisor process with TerminateProcess, the way a crash or
// Task Manager would: no handler of its own runs. Its pid cannot have been
// reused: the test holds its process handle.
func (r *run) kill() {
	r.t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, r.proc.Pid)
	require.NoError(r.t, err)
	defer windows.CloseHandle(h)
	require.NoError(r.t, windows.TerminateProcess(h, 137))
}

// touch creates path (a fakehold waitfile step's trigger).
func touch(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o600))
}

// containment decodes a terminal line's containment object.
func containment(t *testing.T, line map[string]any) map[string]any {
	t.Helper()
	c, ok := line["containment"].(map[string]any)
	require.True(t, ok, "no containment object in %v", line)
	return c
}

// gracefulStopFailed reports whether the supervisor said it could not deliver
// CTRL_BREAK_EVENT to a group (Wine cannot).
func (r *run) gracefulStopFailed() bool {
	return strings.Contains(r.stderr(), "GenerateConsoleCtrlEvent")
}
