package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// moduleRoot is the module's top directory, from this package's: the programs
// the tests build and the scripts they run are named from there.
const moduleRoot = "../../.."

// bins are built by TestMain, or found built from the same sources
// (proctest.BuildShared): the supervisor with its test pause hooks compiled
// in, the scripted hold, the misbehaving worker and the other helpers.
var bins struct{ dir, sup, hold, esc, octostore, authority, attacker, fenceworker, localuser, cloneinto string }

func TestMain(m *testing.M) {
	// A supervisor may run this test binary as its protected worker
	// (local_linux_test.go); it then does only that.
	if os.Getenv(localWorkerEnv) != "" {
		os.Exit(localWorkerMain())
	}
	// Built once for both runs of the suite (make test runs it per backend)
	// and kept while the sources stay the same.
	dir, err := proctest.BuildShared(moduleRoot, []proctest.Program{
		{Name: "octostore", Pkg: "./cmd/octostore", Tags: "urfave_cli_no_docs"},
		{Name: "authority", Pkg: "./testbin/authority"},
		{Name: "octostore-supervisor", Pkg: "./cmd/octostore-supervisor", Tags: "octostore_testhooks,urfave_cli_no_docs", Images: []proctest.Image{ // as make build
			{Pkg: "./cmd/octostore-hold", Tags: "octostore_noetcd,urfave_cli_no_docs"}, {Pkg: "./cmd/octostore-helper"}}},
		{Name: "fakehold", Pkg: "./testbin/fakehold"},
		{Name: "escaper", Pkg: "./testbin/escaper"},
		{Name: "attacker", Pkg: "./testbin/attacker"},
		{Name: "fenceworker", Pkg: "./testbin/fenceworker"},
		{Name: "localuser", Pkg: "./testbin/localuser"},
		{Name: "cloneinto", Pkg: "./testbin/cloneinto"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bins.dir = dir
	bins.sup = filepath.Join(dir, "octostore-supervisor")
	bins.hold = filepath.Join(dir, "fakehold")
	bins.esc = filepath.Join(dir, "escaper")
	bins.octostore = filepath.Join(dir, "octostore")
	bins.authority = filepath.Join(dir, "authority")
	bins.attacker = filepath.Join(dir, "attacker")
	bins.fenceworker = filepath.Join(dir, "fenceworker")
	bins.localuser = filepath.Join(dir, "localuser")
	bins.cloneinto = filepath.Join(dir, "cloneinto")
	// Orphans of anything a test started come back to us instead of PID 1, so a
	// leak is a live descendant we can see, name and kill.
	if err := platform.BecomeSubreaper(); err != nil {
		panic(err)
	}
	code := m.Run()
	if leaks := liveDescendants(os.Getpid()); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "LEAK: processes still alive after all tests:\n")
		for _, p := range leaks {
			fmt.Fprintf(os.Stderr, "  pid %d state %c %s\n", p.Pid, p.State, platform.Cmdline(p.Pid))
			_ = proctest.Kill(proctest.Record{Pid: p.Pid, Start: p.StartTicks})
		}
		code = 1
	}
	os.Exit(code)
}

func liveDescendants(root int) []platform.Proc {
	ps, _ := platform.NewProcReader().Descendants(root, nil)
	var live []platform.Proc
	for _, p := range ps {
		if !p.Dead() {
			live = append(live, p)
		}
	}
	return live
}

// testContainment runs the whole suite under one backend: make test runs it
// once with the default (auto) and once with process-group.
var testContainment = os.Getenv("OCTOSTORE_TEST_CONTAINMENT")

// defaultPassOnly runs t only in the suite's default pass. It is for a test
// whose supervisors never take the suite's backend: each picks its own
// (--containment), or runs with what auto picks. A pass with
// OCTOSTORE_TEST_CONTAINMENT set (make test's second) would run the very
// same scenarios again, adding time and no coverage.
func defaultPassOnly(t *testing.T) {
	t.Helper()
	if testContainment != "" {
		t.Skip("picks its backends itself; the default pass of the suite runs it")
	}
}

// wantBackend is the backend a run started with s reports: auto picks cgroup
// here as root, and process-group for an unprivileged supervisor.
func wantBackend(s sc) string {
	for i, f := range s.flags {
		if f == "--containment" && i+1 < len(s.flags) {
			return s.flags[i+1]
		}
	}
	switch {
	case testContainment != "" && testContainment != "auto":
		return testContainment
	case s.uid != 0 || os.Geteuid() != 0:
		return "process-group"
	}
	return "cgroup"
}

// sc describes one supervised run. Paths may use {dir}, the test's own directory.
type sc struct {
	kind        string   // election (default) or lock
	cand        string   // default "agent" for elections, "-" for locks
	hold        []string // fakehold flags and steps
	worker      string   // escaper flags; "" means a cooperative worker that sleeps
	env         []string
	flags       []string   // supervisor flags, before the kind
	pause       string     // test hook: the supervisor SIGSTOPs itself at this point
	setpgid     bool       // start the supervisor as its own process-group leader
	uid         uint32     // run the supervisor as this user (0: as the test)
	holdPre     string     // shell run before the hold execs (e.g. to record its environment)
	cgroupProcs string     // join this cgroup.procs before exec'ing the supervisor
	files       []*os.File // the supervisor's caller's descriptors from 3 up (nil: closed)
}

// run is one supervisor process under test.
type run struct {
	t     *testing.T
	dir   string
	cmd   *exec.Cmd
	out   *lines
	errb  *syncBuf
	done  chan struct{}
	code  int
	began time.Time
	gsess chan platform.Proc // the guardian, whose session holds all our helpers
	sc    sc
}

func start(t *testing.T, s sc) *run {
	t.Helper()
	dir := t.TempDir()
	if s.uid != 0 || slices.Contains(s.flags, "--worker-user") {
		// t.TempDir's parent is private to us; the other user must reach its child.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		require.NoError(t, os.Chmod(dir, 0o777))
	}
	expand := func(v string) string { return strings.ReplaceAll(v, "{dir}", dir) }
	kind := s.kind
	if kind == "" {
		kind = "election"
	}
	cand := s.cand
	if cand == "" {
		cand = "agent"
		if kind == "lock" {
			cand = "-"
		}
	}
	wflags := s.worker
	if wflags == "" {
		wflags = "--term-exits"
	}
	worker := filepath.Join(dir, "worker.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' --pidfile '%s/pids' --log '%s/log' %s\n", bins.esc, dir, dir, expand(wflags))
	require.NoError(t, os.WriteFile(worker, []byte(script), 0o755))

	hold := bins.hold
	if s.holdPre != "" {
		hold = filepath.Join(dir, "hold.sh")
		pre := fmt.Sprintf("#!/bin/sh\n%s\nexec %s \"$@\"\n", expand(s.holdPre), bins.hold)
		require.NoError(t, os.WriteFile(hold, []byte(pre), 0o755))
	}
	args := append([]string{kind}, shareNobody(s.flags)...)
	if testContainment != "" && !slices.Contains(s.flags, "--containment") {
		args = append(args, "--containment", testContainment)
	}
	args = append(args, "room", cand, worker, "--", hold, "--kind", kind, "--pidfile", dir+"/hold.pids")
	for _, h := range s.hold {
		args = append(args, expand(h))
	}
	cmd := exec.Command(bins.sup, args...)
	if s.cgroupProcs != "" {
		// The supervisor must be inside the cgroup before it runs an instruction.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, s.cgroupProcs, bins.sup}, args...)...)
	}
	// The private state directory (survivor records, interlocks) is the run's
	// own unless a test shares one: an ambient XDG_RUNTIME_DIR would make
	// unrelated tests on the room "room" wait for each other. Root's is never
	// below a directory the worker's user may write to (root refuses it).
	state := dir
	if s.uid == 0 && slices.Contains(s.flags, "--worker-user") {
		state = t.TempDir()
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+state, "XDG_RUNTIME_DIR=")
	for _, e := range s.env {
		cmd.Env = append(cmd.Env, expand(e))
	}
	if s.pause != "" {
		cmd.Env = append(cmd.Env, "OCTOSTORE_SUPERVISOR_TESTHOOK_PAUSE="+s.pause)
	}
	cmd.ExtraFiles = s.files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: s.setpgid}
	if s.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: s.uid, Gid: s.uid}
	}
	r := &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1), sc: s}
	return launch(t, r)
}

// launch starts r's supervisor and registers the end-of-test proofs: the
// supervisor exited, every recorded process is dead, the guardian's session is
// empty.
func launch(t *testing.T, r *run) *run {
	t.Helper()
	cmd, dir := r.cmd, r.dir
	cmd.Stdout, cmd.Stderr = r.out, r.errb
	// Wait also waits for the copies of stdout and stderr, which end only when
	// every process holding the pipes has closed them: a guardian or hold that
	// outlived its supervisor (the bug a test is there to catch) would hang
	// the test until the suite's timeout instead of failing it with the
	// proofs below.
	cmd.WaitDelay = 10 * time.Second
	require.NoError(t, cmd.Start())
	r.began = time.Now()
	go r.findGuardian()
	go func() {
		_ = cmd.Wait()
		r.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-r.done
			t.Errorf("supervisor %v was still running at the end of the test; stderr:\n%s", cmd.Args[1:], r.errb.String())
		}
		requireGone(t, dir)
		r.requireSessionGone()
	})
	return r
}

// findGuardian records the guardian (the supervisor's first child) as soon as it
// exists; a supervisor that fails before starting one leaves nothing to record.
func (r *run) findGuardian() {
	pr := platform.NewProcReader()
	var guardian *platform.Proc
	proctest.Until(3*time.Second, func() bool {
		ps, _ := pr.Descendants(r.cmd.Process.Pid, nil)
		for _, p := range ps {
			if p.PPid == r.cmd.Process.Pid && strings.Contains(platform.Cmdline(p.Pid), "__octostore-guardian") {
				guardian = &p
				return true
			}
		}
		return exited(r)
	})
	if guardian != nil {
		r.gsess <- *guardian
	}
	close(r.gsess)
}

// requireSessionGone proves that the guardian's session - the guardian, the shims
// and whatever stayed in their groups - is empty a bounded time after the test,
// and reaps what was orphaned to the test process.
func (r *run) requireSessionGone() {
	g, ok := <-r.gsess
	if !ok {
		return
	}
	pr := platform.NewProcReader()
	inSession := func() (alive, zombies []platform.Proc) {
		pids, _ := pr.Pids(nil)
		for _, pid := range pids {
			p, err := pr.Stat(pid)
			if err != nil || p.Sid != g.Pid {
				continue
			}
			if p.Dead() {
				zombies = append(zombies, p)
			} else {
				alive = append(alive, p)
			}
		}
		return alive, zombies
	}
	var alive []platform.Proc
	if proctest.Until(8*time.Second, func() bool {
		var zombies []platform.Proc
		alive, zombies = inSession()
		for _, z := range zombies {
			proctest.Reap(proctest.Record{Pid: z.Pid, Start: z.StartTicks})
		}
		return len(alive) == 0
	}) {
		return
	}
	for _, p := range alive {
		r.t.Errorf("left running in the guardian's session: pid %d %s", p.Pid, platform.Cmdline(p.Pid))
		_ = proctest.Kill(proctest.Record{Pid: p.Pid, Start: p.StartTicks})
	}
}

// wait returns the exit code, failing the test if the supervisor runs past limit.
func (r *run) wait(limit time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(limit):
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		r.t.Fatalf("supervisor still running after %v; stdout:\n%s\nstderr:\n%s", limit, r.out.String(), r.errb.String())
		return -1
	}
}

func (r *run) stderr() string { return r.errb.String() }

// exited reports whether the supervisor has exited.
func exited(r *run) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// events lists the event names printed on stdout, checking every line is a
// supervisor line.
func (r *run) events() []string { r.t.Helper(); return stdoutEvents(r.t, r.out) }

// line returns the decoded stdout line for an event.
func (r *run) line(event string) map[string]any {
	r.t.Helper()
	return stdoutLine(r.t, r.out, r.errb, event)
}

// waitEvent waits until the supervisor printed event.
func (r *run) waitEvent(event string, limit time.Duration) {
	r.t.Helper()
	printed := func() bool {
		return slices.ContainsFunc(r.out.Lines(), func(l string) bool { return strings.Contains(l, `"event":"`+event+`"`) })
	}
	if proctest.Until(limit, func() bool { return printed() || exited(r) }) && printed() {
		return
	}
	if exited(r) {
		r.t.Fatalf("supervisor exited %d before printing %q; stderr:\n%s", r.code, event, r.errb.String())
	}
	r.t.Fatalf("no %q within %v; stdout:\n%s\nstderr:\n%s", event, limit, r.out.String(), r.errb.String())
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	proctest.WaitFor(t, limit, path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// waitStopped waits until pid is stopped (the test hook froze the supervisor).
func waitStopped(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	proctest.WaitFor(t, limit, fmt.Sprintf("every thread of pid %d to stop", pid), func() bool { return proctest.AllThreadsStopped(pid) })
}

// children returns the live direct children of pid.
func children(pid int) []platform.Proc {
	ps, _ := platform.NewProcReader().Descendants(pid, nil)
	var out []platform.Proc
	for _, p := range ps {
		if p.PPid == pid && !p.Dead() {
			out = append(out, p)
		}
	}
	return out
}

// guardianOf returns the guardian's pid: the supervisor's only child.
func guardianOf(t *testing.T, sup int) int {
	t.Helper()
	var guardian int
	proctest.WaitFor(t, 5*time.Second, fmt.Sprintf("the guardian below supervisor %d", sup), func() bool {
		c := children(sup)
		if len(c) == 1 {
			guardian = c[0].Pid
		}
		return guardian != 0
	})
	return guardian
}

// recorded is one pidfile line (a proctest.Record under the names these tests
// use).
type recorded struct {
	pid   int
	start uint64
	role  string
}

func (rec recorded) record() proctest.Record {
	return proctest.Record{Pid: rec.pid, Start: rec.start, Role: rec.role}
}

// pidsIn reads a pidfile written by escaper or fakehold ("PID START [ROLE]"):
// the well-formed lines, nothing if the file is missing or unreadable.
func pidsIn(path string) []recorded {
	recs, _ := proctest.ReadPidfile(path)
	var out []recorded
	for _, r := range recs {
		out = append(out, recorded{pid: r.Pid, start: r.Start, role: r.Role})
	}
	return out
}

// aliveRecorded returns the recorded processes that can still run. A zombie is
// dead; a recycled pid (other start time) is someone else.
func aliveRecorded(recs []recorded) []recorded {
	var alive []recorded
	for _, rec := range recs {
		if rec.record().Alive() {
			alive = append(alive, rec)
		}
	}
	return alive
}

// requireGone proves that every process the test's worker and hold recorded is
// dead, and that no helper of ours was orphaned to the test process. Survivors are
// killed (only if still the recorded process) so one failure does not poison the
// rest of the suite; recorded zombies orphaned to us are reaped.
func requireGone(t *testing.T, dir string) {
	t.Helper()
	recs := append(pidsIn(filepath.Join(dir, "pids")), pidsIn(filepath.Join(dir, "hold.pids"))...)
	for _, a := range aliveRecorded(recs) {
		t.Errorf("survivor: pid %d (%s) %s", a.pid, a.role, platform.Cmdline(a.pid))
		_ = proctest.Kill(a.record())
	}
	for _, rec := range recs {
		proctest.Reap(rec.record())
	}
}

// requireNeverRan asserts the worker never executed a single instruction of its own.
func requireNeverRan(t *testing.T, r *run) {
	t.Helper()
	_, err := os.Stat(filepath.Join(r.dir, "log"))
	require.True(t, os.IsNotExist(err), "the worker ran")
	require.Empty(t, pidsIn(filepath.Join(r.dir, "pids")), "the worker ran")
}

// requireNoMarker asserts no process lived long enough to write a marker file.
func requireNoMarker(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "marker*"))
	require.Empty(t, m, "a protected process outlived its deadline")
}

// lines collects stdout; Lines splits it.
type lines = proctest.SyncBuffer

func newLines() *lines { return &lines{} }

// syncBuf collects stderr.
type syncBuf = proctest.SyncBuffer
