package supervisor

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Issue 6: the host-local authority with the embedded hold, end to end through
// the real supervisor binary (no "-- <hold command>": it re-executes itself as
// the octostore client) and the interlock that keeps a hand-over from starting
// the next worker before the previous worker's tree is proven gone.

// Environment of the worker mode of this test binary. TestMain runs
// localWorkerMain instead of the tests when localWorkerEnv is set, so a
// supervisor can use the test binary itself as its protected worker (it passes
// its environment on, minus the holder's secrets).
const (
	localWorkerEnv = "OCTOSTORE_IT_WORKER" // any value: be the worker
	envIntervals   = "OCTOSTORE_IT_LOG"    // shared file of "start|stop NS TERM PID" lines
	envPidfile     = "OCTOSTORE_IT_PIDS"   // "PID START worker", for requireGone
	envLinger      = "OCTOSTORE_IT_READY"  // create this file, then work until SIGTERM
	envMark        = "OCTOSTORE_IT_MARK"   // tags every hold and worker a test started
)

// interlockWait is what a supervisor says when its hold won the room but the
// previous holder's worker is not proven gone yet.
const interlockWait = "waiting until the previous holder's worker is proven gone (interlock)"

var provenEmptyAt = regexp.MustCompile(`(?m)^octostore-supervisor: worker group proven empty at (\S+) \(`)

// boottimeNs reads CLOCK_BOOTTIME in nanoseconds: one clock for every worker of
// a test, immune to wall-clock steps (platform.ContinuousMillis is too coarse
// for intervals a few milliseconds apart).
func boottimeNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// localWorkerMain is the worker: it records its pid, appends "start NS TERM PID"
// to $OCTOSTORE_IT_LOG, works 0-5 ms (or, with $OCTOSTORE_IT_READY, creates that
// file and works until SIGTERM, then cleans up for 50-150 ms), appends
// "stop NS TERM PID" and exits 0. SIGTERM always ends the work early and still
// gets its stop line. Each line is one write to an O_APPEND file, so lines of
// concurrent workers never interleave.
func localWorkerMain() int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "local worker: %v\n", err)
		return 70
	}
	// Caught before the start line: a start line always gets its stop line.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	pid := os.Getpid()
	if path := os.Getenv(envPidfile); path != "" {
		p, err := proctest.Stat(pid)
		if err != nil {
			return fail(err)
		}
		if err := appendOnce(path, fmt.Sprintf("%d %d worker\n", pid, p.StartTicks)); err != nil {
			return fail(err)
		}
	}
	log, err := os.OpenFile(os.Getenv(envIntervals), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	term := os.Getenv("OCTOSTORE_FENCING_TERM")
	note := func(what string) error {
		ns, err := boottimeNs()
		if err != nil {
			return err
		}
		_, err = log.Write([]byte(fmt.Sprintf("%s %d %s %d\n", what, ns, term, pid)))
		return err
	}
	if err := note("start"); err != nil {
		return fail(err)
	}
	if ready := os.Getenv(envLinger); ready != "" {
		if err := os.WriteFile(ready, nil, 0o600); err != nil {
			return fail(err)
		}
		select {
		case <-sigs:
			// Cleaning up after TERM, as real work does: the next holder's
			// hold may win the room meanwhile, its worker must still wait.
			time.Sleep(time.Duration(50+mrand.IntN(101)) * time.Millisecond)
		case <-time.After(time.Minute):
		}
	} else {
		select {
		case <-sigs:
		case <-time.After(time.Duration(mrand.IntN(5001)) * time.Microsecond):
		}
	}
	if err := note("stop"); err != nil {
		return fail(err)
	}
	return 0
}

func appendOnce(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(line))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// newMark returns a value for $OCTOSTORE_IT_MARK unique to one test.
func newMark(t *testing.T) string {
	var b [8]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// markedAlive lists the live processes whose environment carries mark: the
// holds and workers a test started (guardians and shims get a minimal
// environment; the guardian-session check covers them).
func markedAlive(mark string) []int {
	pr := platform.NewProcReader()
	pids, _ := pr.Pids(nil)
	needle := []byte(envMark + "=" + mark + "\x00")
	var alive []int
	for _, pid := range pids {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		if p, err := pr.Stat(pid); err == nil && !p.Dead() {
			alive = append(alive, pid)
		}
	}
	return alive
}

// requireNoMarked proves, within a bounded time, that nothing carrying mark
// still runs; survivors are named and killed.
func requireNoMarked(t *testing.T, mark string) {
	t.Helper()
	var alive []int
	if proctest.Until(10*time.Second, func() bool { alive = markedAlive(mark); return len(alive) == 0 }) {
		return
	}
	for _, pid := range alive {
		t.Errorf("left running: pid %d %s", pid, platform.Cmdline(pid))
		if p, err := proctest.Stat(pid); err == nil {
			_ = proctest.Kill(proctest.Record{Pid: pid, Start: p.StartTicks})
		}
	}
}

// localEnv is the test's environment without any OCTOSTORE_ variable (an
// ambient server URL or token must not change what is tested), plus extra.
func localEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OCTOSTORE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// privateDir is a fresh 0700 directory (a state directory or $XDG_RUNTIME_DIR).
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o700))
	return dir
}

// createRoom makes a room with `octostore election create` (ids starting with
// '-' included: the embedded form takes them as they are).
func createRoom(t *testing.T, server string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bins.octostore, "election", "create", "--server", server, "--json")
	cmd.Env = localEnv(env...)
	return createdRoom(t, cmd)
}

// containmentFlags passes the suite's backend (OCTOSTORE_TEST_CONTAINMENT) on.
func containmentFlags() []string {
	if testContainment == "" {
		return nil
	}
	return []string{"--containment", testContainment}
}

// startLocal starts `octostore-supervisor <kind> <flags> <name> <cand> <worker>`
// with the embedded hold and an escaper worker (flags s.worker; it records its
// processes in {dir}/pids and logs to {dir}/log). The end-of-test proofs are
// launch's.
func startLocal(t *testing.T, s sc, kind, name, cand string, flags ...string) *run {
	t.Helper()
	dir := t.TempDir()
	if s.uid != 0 {
		// t.TempDir's parent is private to us; the other user must reach its child.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		require.NoError(t, os.Chmod(dir, 0o777))
	}
	expand := func(v string) string { return strings.ReplaceAll(v, "{dir}", dir) }
	worker := filepath.Join(dir, "worker.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' --pidfile '%s/pids' --log '%s/log' %s\n", bins.esc, dir, dir, expand(s.worker))
	require.NoError(t, os.WriteFile(worker, []byte(script), 0o755))
	args := append(append([]string{kind}, flags...), containmentFlags()...)
	args = append(args, name, cand, worker)
	cmd := exec.Command(bins.sup, args...)
	cmd.Env = localEnv("TMPDIR=" + dir)
	for _, e := range s.env {
		cmd.Env = append(cmd.Env, expand(e))
	}
	if s.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: s.uid, Gid: s.uid}}
	}
	r := &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1), sc: s}
	return launch(t, r)
}

// holdOf finds the embedded hold of the supervisor sup: its one live
// descendant running "__octostore-hold".
func holdOf(sup int) (proctest.Record, error) {
	ps, err := platform.NewProcReader().Descendants(sup, nil)
	if err != nil {
		return proctest.Record{}, err
	}
	var found []proctest.Record
	for _, p := range ps {
		if !p.Dead() && strings.Contains(platform.Cmdline(p.Pid), "__octostore-hold") {
			found = append(found, proctest.Record{Pid: p.Pid, Start: p.StartTicks, Role: "hold"})
		}
	}
	if len(found) != 1 {
		return proctest.Record{}, fmt.Errorf("supervisor %d has %d live embedded holds, want 1", sup, len(found))
	}
	return found[0], nil
}

// killHold SIGKILLs r's embedded hold.
func killHold(t *testing.T, r *run) {
	t.Helper()
	h, err := holdOf(r.cmd.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, proctest.Signal(h, syscall.SIGKILL))
}

// lastSeenAlive polls recs until none is alive (at most bound) and returns
// the last moment one still was: taken before the read that saw it alive, so
// the process surely lived then. seen is a moment one was seen alive before
// the call (zero for none: then one must be alive at the first read).
func lastSeenAlive(t *testing.T, recs []recorded, seen time.Time) time.Time {
	t.Helper()
	last := seen
	deadline := time.Now().Add(bound)
	for {
		before := time.Now()
		if len(aliveRecorded(recs)) == 0 {
			break
		}
		last = before
		require.True(t, before.Before(deadline), "recorded processes outlived their containment by %v", bound)
		// Not proctest.Until: the moment is measured, so every millisecond
		// is looked at.
		time.Sleep(time.Millisecond)
	}
	require.False(t, last.IsZero(), "nothing recorded was alive: nothing was tested")
	return last
}

// provenEmpty reads the moment a supervisor said its worker group was proven
// empty (wall clock, from its stderr).
func provenEmpty(t *testing.T, r *run) time.Time {
	t.Helper()
	m := provenEmptyAt.FindStringSubmatch(r.stderr())
	require.NotNil(t, m, "no proof of an empty worker group on stderr:\n%s", r.stderr())
	at, err := time.Parse(time.RFC3339Nano, m[1])
	require.NoError(t, err)
	return at
}

// workerStarted reads escaper's --started-at file (unix ns of its main).
func workerStarted(t *testing.T, r *run) int64 {
	t.Helper()
	path := filepath.Join(r.dir, "started")
	var b []byte
	// escaper renames the file into place with its line in it.
	proctest.WaitFor(t, bound, "the worker's start time", func() bool {
		b, _ = os.ReadFile(path)
		return bytes.HasSuffix(b, []byte("\n"))
	})
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err, "%q", b)
	return ns
}

// contenderRun is one supervisor of the overlap test.
type contenderRun struct {
	r       *run
	n       int64 // launch number, 1-based
	cand    string
	abrupt  bool   // its hold is to be SIGKILLed while its worker runs
	killed  bool   // it was
	problem string // what went wrong driving it (not its verdict)
}

// Issue 6, the main property: 8 contenders hand one room over 200 times through
// the embedded local hold; every worker records its [start, stop] on the boot
// clock with its fencing term. In one leadership of ten the leader's hold is
// SIGKILLed while its worker runs (the room passes on at once; the interlock
// must still hold the next worker back). No two intervals may overlap, terms
// must increase in start order, and every supervisor exits 0 (released) or,
// when its hold was killed, 70.
func TestLocalOverlap8Contenders200Handovers(t *testing.T) {
	// Not parallel: 8 supervisors at a time are load enough for 2 cores, and
	// the measured duration is only meaningful alone.
	const contenders, handovers = 8, 200
	work := t.TempDir()
	state := privateDir(t)
	server := "file://" + state
	room := createRoom(t, server)
	self, err := os.Executable()
	require.NoError(t, err)
	intervals := filepath.Join(work, "intervals")
	mark := newMark(t)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var launched atomic.Int64
	var mu sync.Mutex
	var runs []*contenderRun
	var wg sync.WaitGroup
	// Nothing of it may be left, whatever the verdict: every worker recorded,
	// every hold and worker tagged, every guardian session.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		requireGone(t, work)
		requireNoMarked(t, mark)
		for _, c := range runs {
			if c.r != nil {
				c.r.requireSessionGone()
			}
		}
	})
	began := time.Now()
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cand := fmt.Sprintf("c%d", i)
			for ctx.Err() == nil {
				n := launched.Add(1)
				if n > handovers {
					return
				}
				c := &contenderRun{n: n, cand: cand, abrupt: n%10 == 5}
				mu.Lock()
				runs = append(runs, c)
				mu.Unlock()
				runContender(ctx, t, c, work, self, server, room, intervals, mark)
				if c.problem != "" {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	require.NoError(t, ctx.Err(), "the hand-overs did not finish within the test's bound")

	// Every supervisor's own account.
	leaderTerms := map[uint64]int64{}
	abrupt, heldBack := 0, 0
	for _, c := range runs {
		r := c.r
		require.Empty(t, c.problem, "run %d (%s)", c.n, c.cand)
		if strings.Contains(r.stderr(), interlockWait) {
			heldBack++
		}
		evs := r.events()
		if len(evs) > 0 && evs[0] == "waiting" {
			evs = evs[1:]
		}
		if c.killed {
			abrupt++
			require.Equal(t, 70, r.code, "run %d: its hold was killed; stderr:\n%s", c.n, r.stderr())
			require.Contains(t, r.stderr(), "without a terminal event", "run %d", c.n)
			require.Equal(t, []string{"leader"}, evs, "run %d", c.n)
		} else {
			require.Equal(t, 0, r.code, "run %d; stderr:\n%s", c.n, r.stderr())
			require.Equal(t, []string{"leader", "released"}, evs, "run %d", c.n)
			rel := r.line("released")
			require.Equal(t, true, rel["containment"].(map[string]any)["proven_empty"], "run %d", c.n)
			require.Equal(t, float64(0), rel["worker_exit_code"], "run %d", c.n)
		}
		term := uint64(r.line("leader")["term"].(float64))
		_, dup := leaderTerms[term]
		require.False(t, dup, "term %d led twice", term)
		leaderTerms[term] = c.n
	}
	require.Len(t, runs, handovers)
	require.Equal(t, handovers/10, abrupt, "abrupt hand-overs")

	// The workers' own account.
	type interval struct {
		start, stop int64
		term        uint64
		pid         int
	}
	b, err := os.ReadFile(intervals)
	require.NoError(t, err)
	byKey := map[string]*interval{}
	var all []*interval
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 4, "malformed interval line %q", l)
		ns, err1 := strconv.ParseInt(f[1], 10, 64)
		term, err2 := strconv.ParseUint(f[2], 10, 64)
		pid, err3 := strconv.Atoi(f[3])
		require.NoError(t, errors.Join(err1, err2, err3), "malformed interval line %q", l)
		key := f[2] + "/" + f[3]
		switch f[0] {
		case "start":
			require.Nil(t, byKey[key], "two start lines for term %d pid %d", term, pid)
			iv := &interval{start: ns, stop: -1, term: term, pid: pid}
			byKey[key] = iv
			all = append(all, iv)
		case "stop":
			iv := byKey[key]
			require.NotNil(t, iv, "stop without a start: %q", l)
			require.Equal(t, int64(-1), iv.stop, "two stop lines for term %d pid %d", term, pid)
			require.GreaterOrEqual(t, ns, iv.start)
			iv.stop = ns
		default:
			t.Fatalf("malformed interval line %q", l)
		}
	}
	require.Len(t, all, handovers, "start lines")
	slices.SortFunc(all, func(a, b *interval) int { return cmp.Compare(a.start, b.start) })
	overlaps := 0
	minGap, sumGap := int64(-1), int64(0)
	for i, iv := range all {
		require.NotEqual(t, int64(-1), iv.stop, "term %d pid %d has no stop line", iv.term, iv.pid)
		_, led := leaderTerms[iv.term]
		require.True(t, led, "a worker ran with term %d, which no supervisor reported", iv.term)
		if i == 0 {
			continue
		}
		prev := all[i-1]
		require.Greater(t, iv.term, prev.term, "terms do not increase in start order")
		gap := iv.start - prev.stop
		if gap <= 0 {
			overlaps++
			t.Errorf("overlap: term %d [%d, %d] and term %d [%d, %d]", prev.term, prev.start, prev.stop, iv.term, iv.start, iv.stop)
		}
		if minGap < 0 || gap < minGap {
			minGap = gap
		}
		sumGap += gap
	}
	require.Zero(t, overlaps)
	t.Logf("%d hand-overs (%d abrupt) by %d contenders in %v (%.0f ms each); overlaps %d; gap between a stop and the next start: smallest %.3f ms, mean %.3f ms; %d supervisors won the room before the previous worker was proven gone and waited on the interlock",
		len(all), abrupt, contenders, elapsed.Round(time.Millisecond), float64(elapsed.Milliseconds())/float64(len(all)),
		overlaps, float64(minGap)/1e6, float64(sumGap)/float64(len(all)-1)/1e6, heldBack)

	require.Len(t, pidsIn(filepath.Join(work, "pids")), handovers, "recorded workers")
}

// runContender runs one supervisor of the overlap test to its end. It runs on
// a goroutine of its own: failures go to c.problem, never t.FailNow.
func runContender(ctx context.Context, t *testing.T, c *contenderRun, work, self, server, room, intervals, mark string) {
	args := append([]string{"election", "--server", server, "--ttl", "10"}, containmentFlags()...)
	cmd := exec.Command(bins.sup, append(args, room, c.cand, self)...)
	cmd.Env = localEnv(localWorkerEnv+"=1", envIntervals+"="+intervals, envPidfile+"="+filepath.Join(work, "pids"), envMark+"="+mark,
		// Under -race a Go program sleeps 1 s at exit (atexit_sleep_ms) by
		// default: every hand-over would wait for it.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	ready := filepath.Join(work, fmt.Sprintf("ready-%d", c.n))
	if c.abrupt {
		cmd.Env = append(cmd.Env, envLinger+"="+ready)
	}
	r := &run{t: t, dir: work, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1)}
	c.r = r
	cmd.Stdout, cmd.Stderr = r.out, r.errb
	if err := cmd.Start(); err != nil {
		c.problem = err.Error()
		close(r.gsess)
		close(r.done)
		return
	}
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
	if c.abrupt {
		// The worker is leader and has its TERM handler once the file exists.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-r.done:
				c.problem = fmt.Sprintf("exited %d before its worker ran; stderr:\n%s", r.code, r.errb.String())
				return
			case <-ctx.Done():
				break wait
			case <-tick.C:
				if _, err := os.Stat(ready); err == nil {
					break wait
				}
			}
		}
		if ctx.Err() == nil {
			h, err := holdOf(cmd.Process.Pid)
			if err == nil {
				err = proctest.Signal(h, syscall.SIGKILL)
			}
			if err != nil {
				c.problem = "killing its hold: " + err.Error()
			} else {
				c.killed = true
			}
		}
	}
	select {
	case <-r.done:
		return
	case <-ctx.Done():
	}
	// Out of time: stop it in order (it contains before it exits).
	c.problem = "still running when the test ran out of time; stderr:\n" + r.errb.String()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
	}
}

// The interlock on its own: A leads with a worker that ignores TERM for the
// whole 2 s grace, B waits. A's hold is SIGKILLed: the kernel hands the room to
// B's hold at its next poll, while A's worker still runs. B's supervisor must
// say it waits on the interlock, and B's worker must start only after A's
// supervisor proved A's worker group empty (both on the wall clock of this
// machine; no slack).
func TestLocalInterlockHoldsBackSecondWorker(t *testing.T) {
	t.Parallel()
	interlockHoldsBack(t, func(string) {})
}

// A worker running as our user can unlink the interlock file (the attacker in
// testbin/attacker does), after which the next supervisor would lock a fresh
// inode. The host lock beside it is a name, not a file: B must still wait.
func TestLocalInterlockSurvivesUnlinkedFile(t *testing.T) {
	t.Parallel()
	interlockHoldsBack(t, func(state string) {
		active, err := filepath.Glob(filepath.Join(state, "*", "*.active"))
		require.NoError(t, err)
		require.NotEmpty(t, active, "no interlock file to unlink in %s", state)
		for _, f := range active {
			require.NoError(t, os.Remove(f))
		}
	})
}

// interlockHoldsBack: A leads with a TERM-ignoring worker, tamper runs on the
// state directory, B starts and waits, A's hold is killed and B's hold wins the room; B's worker
// must start only after A's worker group was proven empty.
func interlockHoldsBack(t *testing.T, tamper func(state string)) {
	state := privateDir(t)
	server := "file://" + state
	room := createRoom(t, server)
	flags := []string{"--server", server, "--ttl", "10", "--term-grace", "2s"}
	a := startLocal(t, sc{worker: "--ignore-signals --child"}, "election", room, "agent-a", flags...)
	a.waitEvent("leader", bound)
	// The TERM-ignoring worker and its child are in their final state.
	waitRecorded(t, a.dir+"/pids", 2)
	tamper(state) // before B opens the interlock, as a worker would
	b := startLocal(t, sc{worker: "--term-exits --started-at {dir}/started"}, "election", room, "agent-b", flags...)
	b.waitEvent("waiting", bound)

	killHold(t, a)
	killed := time.Now()
	proctest.WaitFor(t, bound, "B's hold to win the room", func() bool {
		return strings.Contains(b.stderr(), interlockWait) || strings.Contains(b.out.String(), `"event":"leader"`)
	})
	won := time.Since(killed)
	aliveThen := len(aliveRecorded(pidsIn(a.dir + "/pids")))

	require.Equal(t, 70, a.wait(bound), a.stderr())
	require.Contains(t, a.stderr(), "without a terminal event")
	require.Equal(t, []string{"leader"}, a.events(), "a supervisor whose hold died prints no terminal line")
	proven := provenEmpty(t, a)
	require.Empty(t, aliveRecorded(pidsIn(a.dir+"/pids")))

	b.waitEvent("leader", bound)
	started := workerStarted(t, b)
	require.Greater(t, started, proven.UnixNano(), "B's worker started at %s, before A's worker group was proven empty at %s",
		time.Unix(0, started).UTC().Format(time.RFC3339Nano), proven.Format(time.RFC3339Nano))
	require.Contains(t, b.stderr(), interlockWait, "B's hold won the room only after A's worker was gone: nothing was tested")
	require.Greater(t, b.line("leader")["term"].(float64), a.line("leader")["term"].(float64))
	t.Logf("B's hold won the room %v after A's hold was killed (A's worker processes still alive then: %d); A proven empty at %s; B's worker started %v later",
		won.Round(time.Millisecond), aliveThen, proven.Format(time.RFC3339Nano), time.Duration(started-proven.UnixNano()).Round(time.Microsecond))

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.Equal(t, "released", b.events()[len(b.events())-1])
	require.Equal(t, true, b.line("released")["containment"].(map[string]any)["proven_empty"])
}

// The supervisor itself dies (SIGKILL) while its TERM-ignoring worker runs. Its
// guardian contains the run on its own: the hold is told to release at once
// (B's hold wins the room), the worker tree dies only after the 2 s grace. The
// guardian's share of the interlock must keep B's worker from starting until
// A's whole worker tree is gone: B's worker start is compared with the last
// moment /proc still showed one of A's worker processes alive (zombies are
// dead).
func TestLocalSupervisorCrashKeepsInterlockUntilContained(t *testing.T) {
	t.Parallel()
	server := "file://" + privateDir(t)
	room := createRoom(t, server)
	flags := []string{"--server", server, "--ttl", "10", "--term-grace", "2s"}
	a := startLocal(t, sc{worker: "--ignore-signals --child"}, "election", room, "agent-a", flags...)
	a.waitEvent("leader", bound)
	b := startLocal(t, sc{worker: "--term-exits --started-at {dir}/started"}, "election", room, "agent-b", flags...)
	b.waitEvent("waiting", bound)
	waitRecorded(t, a.dir+"/pids", 2)
	aw := pidsIn(a.dir + "/pids")

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	lastAlive := lastSeenAlive(t, aw, time.Time{})

	b.waitEvent("leader", bound)
	started := workerStarted(t, b)
	require.Greater(t, started, lastAlive.UnixNano(), "B's worker started at %s while A's worker tree was alive at %s",
		time.Unix(0, started).UTC().Format(time.RFC3339Nano), lastAlive.UTC().Format(time.RFC3339Nano))
	require.Contains(t, b.stderr(), interlockWait, "B's hold won the room only after A's worker was gone: nothing was tested")
	require.Equal(t, 137, a.wait(bound))
	t.Logf("A's worker tree gone %v after A's supervisor was killed; B's worker started %v after the last sight of it",
		lastAlive.Sub(killed).Round(time.Millisecond), time.Duration(started-lastAlive.UnixNano()).Round(time.Microsecond))

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.Equal(t, "released", b.events()[len(b.events())-1])
}

// H7 for the embedded hold, which roots its own group with no shim above it
// to kill it: when the supervisor and the guardian are both SIGKILLed, the
// hold ends at once (no authority is held for a run nobody contains any more)
// and the worker's shim kills the worker's tree; a second candidate then wins
// the room long before the hold's TTL (60 s) could have run out.
func TestLocalEmbeddedHoldEndsWithItsGuardian(t *testing.T) {
	t.Parallel()
	server := "file://" + privateDir(t)
	room := createRoom(t, server)
	flags := []string{"--server", server, "--ttl", "60"}
	a := startLocal(t, sc{worker: "--ignore-signals --child"}, "election", room, "agent-a", flags...)
	a.waitEvent("leader", bound)
	waitRecorded(t, a.dir+"/pids", 2)
	hold, err := holdOf(a.cmd.Process.Pid)
	require.NoError(t, err)
	g := guardianOf(t, a.cmd.Process.Pid)

	require.NoError(t, a.cmd.Process.Kill())
	require.NoError(t, syscall.Kill(g, syscall.SIGKILL))
	require.Equal(t, 137, a.wait(bound))
	require.True(t, proctest.Until(3*time.Second, func() bool { return !hold.Alive() }), "the embedded hold outlived its guardian")
	requireAllDeadWithin(t, a.dir, 3*time.Second)

	b := startLocal(t, sc{worker: "--term-exits"}, "election", room, "agent-b", flags...)
	b.waitEvent("leader", bound)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.Equal(t, []string{"leader", "released"}, b.events())
}

// Bad input to the embedded local hold is refused by the supervisor's command
// line: exit 64, one line on stderr, no hold or worker started, nothing
// created in the state directory. The lock form needs no token locally.
func TestLocalBadInputRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	type refusal struct {
		name   string
		args   func(t *testing.T, worker string) []string // after the binary
		want   string                                     // in the error line
		assert func(t *testing.T)                         // afterwards
	}
	var cases []refusal
	{
		missing := filepath.Join(t.TempDir(), "nonexistent")
		cases = append(cases, refusal{"missing state directory",
			func(t *testing.T, w string) []string {
				return []string{"election", "--server", "file://" + missing, "room", "c1", w}
			}, "does not exist", func(t *testing.T) {
				_, err := os.Lstat(missing)
				require.True(t, os.IsNotExist(err), "the state directory was created")
			}})
	}
	{
		real := privateDir(t)
		link := filepath.Join(t.TempDir(), "link")
		require.NoError(t, os.Symlink(real, link))
		cases = append(cases, refusal{"symlinked state directory",
			func(t *testing.T, w string) []string {
				return []string{"lock", "--server", "file://" + link, "name", "-", w}
			}, "is a symbolic link", func(t *testing.T) { requireEmptyDir(t, real) }})
	}
	{
		open := privateDir(t)
		require.NoError(t, os.Chmod(open, 0o777))
		cases = append(cases, refusal{"world-writable state directory without sticky bit",
			func(t *testing.T, w string) []string {
				return []string{"election", "--server", "file://" + open, "room", "c1", w}
			}, "world-writable without the sticky bit", func(t *testing.T) {
				requireEmptyDir(t, open)
				// Control: the same directory with the sticky bit is accepted.
				require.NoError(t, os.Chmod(open, os.ModeSticky|0o777))
				createRoom(t, "file://"+open)
			}})
	}
	{
		dir := privateDir(t)
		for _, c := range []struct{ kind, name, cand string }{
			{"election", "a/../b", "c1"}, {"lock", "x/../../etc/passwd", "-"}, {"lock", "/abs", "-"},
		} {
			cases = append(cases, refusal{c.kind + " name " + c.name,
				func(t *testing.T, w string) []string {
					return []string{c.kind, "--server", "file://" + dir, c.name, c.cand, w}
				}, "would escape the local state directory", func(t *testing.T) {
					for _, sub := range []string{"elections", "locks"} {
						m, _ := filepath.Glob(filepath.Join(dir, sub, "*"))
						require.Empty(t, m, "a file was created for a refused name")
					}
				}})
		}
	}
	{
		// Issue 10 item 6: entries another user planted, or everyone may
		// write, in a shared directory are refused with the path named.
		shared := privateDir(t)
		require.NoError(t, os.Chmod(shared, 0o770|os.ModeSetgid))
		term := filepath.Join(shared, "term")
		require.NoError(t, os.WriteFile(term, nil, 0o600))
		require.NoError(t, os.Chmod(term, 0o666))
		cases = append(cases, refusal{"world-writable term planted in a group-shared directory",
			func(t *testing.T, w string) []string {
				return []string{"election", "--server", "file://" + shared, "room", "c1", w}
			}, term + " is writable by every user", nil})
		if os.Geteuid() == 0 {
			private := privateDir(t)
			elections := filepath.Join(private, "elections")
			require.NoError(t, os.Mkdir(elections, 0o700))
			require.NoError(t, os.Chown(elections, 65534, 65534))
			cases = append(cases, refusal{"elections planted by another user",
				func(t *testing.T, w string) []string {
					return []string{"election", "--server", "file://" + private, "room", "c1", w}
				}, elections + " is owned by another user (uid 65534)", nil})
		}
	}
	for _, c := range []struct{ kind, ttl, want string }{
		{"election", "4", "TTL must be between 5 and 300 seconds"},
		{"election", "301", "TTL must be between 5 and 300 seconds"},
		{"lock", "0", "TTL must be between 1 and 3600 seconds"},
		{"lock", "3601", "TTL must be between 1 and 3600 seconds"},
		{"election", "4294967296", "--ttl is out of range"},
	} {
		cases = append(cases, refusal{c.kind + " --ttl " + c.ttl,
			func(t *testing.T, w string) []string {
				cand := "c1"
				if c.kind == "lock" {
					cand = "-"
				}
				return []string{c.kind, "--server", "local", "--ttl", c.ttl, "name", cand, w}
			}, c.want, nil})
	}
	cases = append(cases, refusal{"--server with an explicit hold command",
		func(t *testing.T, w string) []string {
			return []string{"election", "--server", "local", "room", "c1", w, "--", bins.octostore, "election", "hold", "room"}
		}, "configure the embedded hold", nil})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			xdg := privateDir(t)
			mark := newMark(t)
			worker := filepath.Join(dir, "worker.sh")
			script := fmt.Sprintf("#!/bin/sh\nexec '%s' --pidfile '%s/pids' --log '%s/log' --term-exits\n", bins.esc, dir, dir)
			require.NoError(t, os.WriteFile(worker, []byte(script), 0o755))
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			cmd := exec.CommandContext(ctx, bins.sup, c.args(t, worker)...)
			cmd.Env = localEnv("XDG_RUNTIME_DIR="+xdg, envMark+"="+mark)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
			require.Equal(t, 64, ee.ExitCode(), "stderr: %s", stderr.String())
			require.Empty(t, stdout.String())
			msg := stderr.String()
			require.True(t, strings.HasPrefix(msg, "octostore-supervisor: ") && strings.Count(msg, "\n") == 1 && strings.HasSuffix(msg, "\n"),
				"want one error line, got %q", msg)
			require.Contains(t, msg, c.want)
			_, err = os.Stat(filepath.Join(dir, "log"))
			require.True(t, os.IsNotExist(err), "the worker ran")
			require.Empty(t, markedAlive(mark), "a hold or worker was started")
			if c.assert != nil {
				c.assert(t)
			}
		})
	}

	// Not a refusal: a local lock has no bearer token to ask for.
	t.Run("lock needs no token", func(t *testing.T) {
		t.Parallel()
		xdg := privateDir(t)
		r := startLocal(t, sc{worker: "--term-exits", env: []string{"XDG_RUNTIME_DIR=" + xdg}}, "lock", "name", "-", "--server", "local", "--acquire-timeout", "10s")
		r.waitEvent("acquired", bound)
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 143, r.wait(bound), r.stderr())
	})
}

func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents, "something was created in %s", dir)
}

// The lock form on the default local state directory ($XDG_RUNTIME_DIR/
// octostore, created 0700): acquired, then SIGTERM to the supervisor: the
// worker tree is proven gone, the hold releases, the terminal line says so and
// the supervisor exits 143. No token is set anywhere.
func TestLocalEmbeddedLockAcquiredReleased(t *testing.T) {
	t.Parallel()
	xdg := privateDir(t)
	const name = "repo/octostore/issue-6"
	r := startLocal(t, sc{worker: "--term-exits --child", env: []string{"XDG_RUNTIME_DIR=" + xdg}}, "lock", name, "-", "--server", "local", "--ttl", "30")
	r.waitEvent("acquired", bound)
	waitRecorded(t, r.dir+"/pids", 2)
	acquired := r.line("acquired")
	term := acquired["term"].(float64)
	log, err := os.ReadFile(filepath.Join(r.dir, "log"))
	require.NoError(t, err)
	require.Contains(t, string(log), fmt.Sprintf(" term %d\n", int64(term)), "the worker's fencing term")

	// The default state directory was made private, and holds this lock.
	st, err := os.Lstat(filepath.Join(xdg, "octostore"))
	require.NoError(t, err)
	require.True(t, st.IsDir())
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	locks, err := filepath.Glob(filepath.Join(xdg, "octostore", "locks", "*.lock"))
	require.NoError(t, err)
	require.Len(t, locks, 1)

	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	require.Equal(t, []string{"acquired", "released"}, r.events())
	rel := r.line("released")
	require.Equal(t, term, rel["term"].(float64))
	c := rel["containment"].(map[string]any)
	require.Equal(t, true, c["proven_empty"])
	require.Equal(t, wantBackend(sc{}), c["backend"])
	require.Empty(t, aliveRecorded(pidsIn(r.dir+"/pids")))
	require.Contains(t, r.stderr(), "worker group proven empty at ")
}

// Election ids are base64url: one in 64 of a server's starts with '-' (ours
// never do: hold.NewElectionID), and one in 4096 with "--", which reads as a
// flag. The embedded form must take such an id as the <election-id> word, as
// the form with "-- <hold command>" does. The host-local authority holds any
// well-formed id, so a server's worst case is used as is.
func TestLocalEmbeddedRoomIDWithLeadingDash(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	const room = "--0IfLYYdvthOyFsgS2cyIvqgc63ZsOP"
	r := startLocal(t, sc{worker: "--term-exits"}, "election", room, "c1", "--server", "file://"+dir, "--acquire-timeout", "10s")
	r.waitEvent("leader", bound)
	require.Equal(t, room, r.line("leader")["name"])
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	require.Equal(t, "released", r.events()[len(r.events())-1])
}
