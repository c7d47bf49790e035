package supervisor

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/fencelog"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Issue 10, "How it is proven": a hostile worker (testbin/attacker) leads
// first. From inside the worker it SIGSTOPs whatever it can of both
// candidates' supervisors, forges hold lines into every descriptor it can
// reopen through /proc (a renewal for itself, a leadership for the waiting
// rival), reads environments for the bearer token and tampers with the local
// state directory. The test then hangs the leader's hold itself, so that its
// renewals stop and its lease ages out at the authority, and lets the rival
// lead. A fenced log is the oracle: every worker appends its fencing term
// through a helper that rejects a term lower than the highest accepted, as a
// fenced store would.

// attackTTL is the election TTL of the attack scenario, in seconds. With
// --term-grace 500ms the leader's deadline falls 1.65 s after its hold's
// renewal (budget 6.4 s, renewal at about 4 s), room enough on a loaded
// machine; every case waits up to this long for the hung lease to age out.
const attackTTL = 8

// attackCase is one way of running the hostile worker.
type attackCase struct {
	name string
	uid  uint32   // the supervisors' user (0: root, as the test)
	iso  []string // isolation flags on both supervisors
	// canStop: the worker may still stop the supervisor side (same user, no
	// PID namespace): a stall, never a second worker. canTamper: it may
	// still rewrite the supervisors' user's state directory.
	canStop, canTamper bool
	// control: the attacker is given nothing as fair game, so the case
	// proves the scenario itself (hang, age-out, hand-over, a green
	// oracle) on any build, isolation or not.
	control bool
}

func TestAttackerCannotOutliveAuthority(t *testing.T) {
	// Not parallel, nor its cases: the attacker and the test itself stop
	// processes, and the thaw at the end of each case resumes every stopped
	// descendant of this test process, which must all be the case's own.
	cases := []attackCase{
		{name: "worker-user", iso: []string{"--worker-user", "nobody"}},
		{name: "private-pids as root", iso: []string{"--private-pids"}, canTamper: true},
		{name: "private-pids as nobody", uid: nobody, iso: []string{"--private-pids"}, canTamper: true},
		{name: "worker-user and private-pids", iso: []string{"--worker-user", "nobody", "--private-pids"}},
		// The default, as the supervisor's own user: the worker's Landlock
		// scope keeps its signals, ptrace and /proc reads inside its own
		// tree; it can still write the user's state.
		{name: "scope (the default), same user", uid: nobody, canTamper: true},
		// Without isolation, as the supervisor's own user: it can stop
		// same-user helpers and write the user's state, but must still not
		// get a second worker started on this host while it lives.
		{name: "no isolation, same user", uid: nobody, iso: []string{"--no-worker-scope"}, canStop: true, canTamper: true},
		{name: "control: nothing fair game", uid: nobody, canTamper: true, control: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runAttack(t, c) })
	}
}

// stuck ends a case whose wait for what timed out, with all there is to see:
// these waits timed out under make test's load (twice, in the same-user
// case), never when the case ran alone.
func (s *attackScene) stuck(t *testing.T, what string, a, b *run) {
	t.Helper()
	now := "gone"
	if p, err := platform.NewProcReader().Stat(s.attacker.Pid); err == nil && p.StartTicks == s.attacker.Start {
		now = proctest.Describe([]platform.Proc{p})
	}
	t.Fatalf("timed out after %v waiting for %s; the attacker (%s): %s\nA's stderr:\n%s\nB's stderr:\n%s",
		bound, what, s.attacker, now, a.stderr(), b.stderr())
}

// attackScene is one case's shared files and settings.
type attackScene struct {
	c                      attackCase
	url, room              string
	shared                 string // fenced log, go file and report; writable by every user
	fence, goFile, report  string
	xdg                    string // both supervisors' XDG_RUNTIME_DIR (the attacker's state target)
	seedTerm, seedHolder   string // seeded local-authority files and their contents
	seedTermB, seedHolderB []byte
	token, mark            string
	attacker               proctest.Record // A's worker, by its host pid
}

func runAttack(t *testing.T, c attackCase) {
	s := newAttackScene(t, c)
	a := s.startSupervisor(t, "agent-a", "ATTACKER_MODE=attack", "ATTACKER_GO="+s.goFile, "ATTACKER_REPORT="+s.report, "ATTACKER_STATE_DIRS="+s.xdg)
	a.waitEvent("leader", bound)
	b := s.startSupervisor(t, "agent-b", "ATTACKER_MODE=fenced")
	b.waitEvent("waiting", bound)
	s.attacker = s.recordWorker(t, a)
	h, err := holdOf(a.cmd.Process.Pid)
	require.NoError(t, err)

	// Go: the two supervisors' trees are fair game.
	roots := fmt.Sprintf("%d %d\n", a.cmd.Process.Pid, b.cmd.Process.Pid)
	if c.control {
		roots = ""
	}
	writeAtomic(t, s.goFile, roots)
	if !proctest.Until(bound, func() bool { _, err := os.Stat(s.report); return err == nil }) {
		s.stuck(t, "the attacker's report "+s.report, a, b)
	}
	rep := readAttackReport(t, s.report)

	// Hang A's hold: its renewals stop and the lease ages out at the
	// authority. (Not a revoke: a lease taken away early cannot be outrun by
	// any supervisor; only fencing protects there.) A same-user attacker may
	// have ended A's run already: stopping the guardian a moment before A's
	// supervisor is stopped itself lets the supervisor see the stop and
	// contain everything, its hold included — the attack failing closed.
	if err := proctest.Signal(h, syscall.SIGSTOP); err != nil {
		require.True(t, c.canStop, "A's hold is gone though the attacker could stop nothing: %v", err)
		t.Logf("A's run was contained before its hold could be hung (%v)", err)
	} else {
		// Time must pass here: the lease ages out only after up to attackTTL.
		// The wait ends on a condition: B's worker runs, B exited, or B says it
		// is waiting for A's worker to be gone (interlock or survivor record)
		// while a same-user attacker keeps A's side stopped.
		//
		// If B has exited first (a same-user attacker stopped B's guardian and B
		// failed closed), resuming A's hold now would give A back a lease it
		// still holds, and A's worker would rightly live on. So the hold stays
		// hung and only the rest is resumed, and the wait is for A's run to end
		// by its own deadline, the property this test is about.
		proctest.WaitFor(t, attackTTL*time.Second+bound, "B to lead, or to say it waits for A's worker, or (B gone) A's run to end", func() bool {
			if s.workerStarted("fenced") || strings.Contains(b.stderr(), "waiting until") {
				return true
			}
			if !exited(b) {
				return false
			}
			thawStopped(t, h.Pid)
			return exited(a) || !s.attacker.Alive()
		})
	}
	// Someone resumes what the attacker stopped (the stall ends only so):
	// again on every look, since a teardown's own stop-then-kill sweep may
	// leave a member stopped while its supervisor waits to be resumed.
	if !proctest.Until(bound, func() bool { thawStopped(t); return !s.attacker.Alive() }) {
		s.stuck(t, "the attacker to be gone", a, b)
	}
	proctest.WaitFor(t, attackTTL*time.Second+bound, "B's worker to start", func() bool {
		return s.workerStarted("fenced") || exited(b)
	})
	if c.canStop && !s.workerStarted("fenced") && strings.Contains(b.stderr(), "the guardian was stopped") {
		// A same-user attacker may stop B's guardian too, before B's
		// supervisor: B then fails closed without ever starting its worker
		// (a stall, never a second worker): 20 (uncertain, guardian_lost)
		// once B had accepted authority, 70 when the guardian was lost before
		// any authority, with nothing of B's to vouch for.
		proctest.WaitFor(t, bound, "B to fail closed", func() bool { thawStopped(t); return exited(b) })
		require.Contains(t, []int{20, 70}, b.code, "B's stderr:\n%s", b.stderr())
		require.NotContains(t, b.out.String(), `"event":"leader"`)
		a.wait(bound)
		t.Logf("B failed closed: the attacker stopped its guardian; A exited %d", a.code)
		for _, l := range readFence(s.fence) {
			require.True(t, l.OK && l.Role == "attack", "only the attacker wrote, and was never rejected: %+v", l)
		}
		return
	}
	require.True(t, s.workerStarted("fenced"), "B never led; B's stderr:\n%s", b.stderr())

	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	b.wait(bound)
	a.wait(bound)
	t.Logf("A exited %d, B exited %d; the attacker's report:\n%s", a.code, b.code, rep.summary())

	s.requireFenced(t)
	s.requireReport(t, rep, a, b, h)
}

func newAttackScene(t *testing.T, c attackCase) *attackScene {
	s := &attackScene{c: c, mark: newMark(t)}
	// Last of all: no hold or worker of the case (they carry the mark) lives.
	t.Cleanup(func() { requireNoMarked(t, s.mark) })
	s.url = startAuthority(t)
	s.room = post(t, s.url+"/elections", "")["election_id"].(string)
	var tok [16]byte
	_, err := rand.Read(tok[:])
	require.NoError(t, err)
	s.token = hex.EncodeToString(tok[:])

	// Shared with the worker's user, whoever that is: the parent only
	// traversable, the directory writable by all (a stand-in for the fenced
	// store, which is outside every sandbox).
	s.shared = t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(s.shared), 0o711))
	require.NoError(t, os.Chmod(s.shared, 0o777))
	s.fence = filepath.Join(s.shared, "fence")
	s.goFile = filepath.Join(s.shared, "go")
	s.report = filepath.Join(s.shared, "report.json")
	require.NoError(t, os.WriteFile(s.fence, nil, 0o666))
	require.NoError(t, os.Chmod(s.fence, 0o666))

	// The supervisors' user's runtime directory, private to that user as a
	// real one is, with a local authority's state in it: a term counter
	// and a holder record in their own formats (hold/local.go).
	top := t.TempDir()
	require.NoError(t, os.Chmod(top, 0o711))
	s.xdg = filepath.Join(top, "xdg")
	local := filepath.Join(s.xdg, "local")
	require.NoError(t, os.MkdirAll(filepath.Join(local, "elections"), 0o700))
	s.seedTerm = filepath.Join(local, "term")
	s.seedHolder = filepath.Join(local, "elections", "room.holder")
	s.seedTermB = []byte(fmt.Sprintf("%020d\n", 42))
	s.seedHolderB = []byte(`{"kind":"election","name":"room","candidate_id":"c","term":42,"pid":1,"holder_id":"h","acquired_at":"2026-01-01T00:00:00Z","expires_at":"2026-01-01T00:00:10Z"}`)
	require.NoError(t, os.WriteFile(s.seedTerm, s.seedTermB, 0o600))
	require.NoError(t, os.WriteFile(s.seedHolder, s.seedHolderB, 0o600))
	if c.uid != 0 {
		require.NoError(t, filepath.WalkDir(s.xdg, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(c.uid), int(c.uid))
		}))
	}
	require.NoError(t, os.Chmod(s.xdg, 0o700))
	return s
}

// startSupervisor starts one candidate: the embedded hold against the fake
// authority, the attacker binary as its worker (its mode in env).
func (s *attackScene) startSupervisor(t *testing.T, cand string, env ...string) *run {
	t.Helper()
	dir := t.TempDir()
	if s.c.uid != 0 {
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		require.NoError(t, os.Chmod(dir, 0o777))
	}
	args := []string{"election", "--server", s.url, "--ttl", strconv.Itoa(attackTTL), "--term-grace", "500ms"}
	args = append(append(args, s.c.iso...), containmentFlags()...)
	if slices.Contains(s.c.iso, "--worker-user") {
		// Its reset environment has none of the attacker's settings.
		for _, v := range []string{"ATTACKER_MODE", "ATTACKER_FENCE", "ATTACKER_GO", "ATTACKER_REPORT", "ATTACKER_STATE_DIRS"} {
			args = append(args, "--worker-env", v)
		}
	}
	args = append(args, s.room, cand, bins.attacker)
	cmd := exec.Command(bins.sup, shareNobody(args)...)
	cmd.Env = localEnv(append([]string{
		"TMPDIR=" + dir, "XDG_RUNTIME_DIR=" + s.xdg, "ATTACKER_FENCE=" + s.fence,
		// Planted for the holds (which get it; workers must not): the
		// attacker looks for it in every environment it can read.
		"OCTOSTORE_TOKEN=" + s.token, envMark + "=" + s.mark,
	}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if s.c.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: s.c.uid, Gid: s.c.uid}
	}
	r := &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1)}
	r = launch(t, r)
	// Runs before launch's end-of-test proofs (cleanups run last first):
	// however the test ends, nothing it or the attacker stopped stays
	// stopped, so the guardians and shims can contain and exit.
	t.Cleanup(func() { thawStopped(t) })
	return r
}

// recordWorker finds r's worker (the attacker binary, whatever wraps it)
// by its host pid and records it in r's pidfile, so that launch's end-of-test
// proof covers it. The worker's own view of its pid is useless here: in a
// PID namespace of its own it is 1.
func (s *attackScene) recordWorker(t *testing.T, r *run) proctest.Record {
	t.Helper()
	var rec proctest.Record
	proctest.WaitFor(t, bound, "the worker below supervisor "+strconv.Itoa(r.cmd.Process.Pid), func() bool {
		ps, _ := platform.NewProcReader().Descendants(r.cmd.Process.Pid, nil)
		for _, p := range ps {
			if !p.Dead() && strings.HasPrefix(platform.Cmdline(p.Pid), bins.attacker) {
				rec = proctest.Record{Pid: p.Pid, Start: p.StartTicks, Role: "worker"}
				return true
			}
		}
		return false
	})
	require.NoError(t, appendOnce(filepath.Join(r.dir, "pids"), fmt.Sprintf("%d %d worker\n", rec.Pid, rec.Start)))
	return rec
}

func (s *attackScene) workerStarted(role string) bool {
	for _, l := range readFence(s.fence) {
		if l.What == "start" && l.Role == role {
			return true
		}
	}
	return false
}

// thawStopped sends SIGCONT to every stopped descendant of this test process
// (the test is not parallel: they are all this case's) but the pids in except,
// so teardown is not left waiting on a frozen guardian or shim.
func thawStopped(t *testing.T, except ...int) {
	pr := platform.NewProcReader()
	ps, _ := pr.Descendants(os.Getpid(), nil)
	for _, p := range ps {
		if (p.State == 'T' || p.State == 't') && !slices.Contains(except, p.Pid) {
			if err := pr.Signal(p, syscall.SIGCONT); err != nil && err != platform.ErrNoProcess {
				t.Errorf("SIGCONT pid %d: %v", p.Pid, err)
			}
		}
	}
}

// readFence reads the fenced log's well-formed lines (internal/testkit/fencelog).
func readFence(path string) []fencelog.Entry {
	out, _ := fencelog.Read(path)
	return out
}

// requireFenced is the oracle: no write was rejected, each worker's term
// covers one interval and the intervals are disjoint in term order, and the
// attacker's last heartbeat precedes the next worker's start.
func (s *attackScene) requireFenced(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(s.fence)
	require.NoError(t, err)
	require.Equal(t, strings.Count(string(b), "\n"), len(readFence(s.fence)), "malformed fenced log:\n%s", b)
	type interval struct {
		role        string
		first, last int64
	}
	byTerm := map[uint64]*interval{}
	var rejected []string
	for _, l := range readFence(s.fence) {
		if !l.OK {
			rejected = append(rejected, fmt.Sprintf("%s %s term %d", l.Role, l.What, l.Term))
		}
		ns := l.Boot.Nanoseconds()
		iv := byTerm[l.Term]
		if iv == nil {
			byTerm[l.Term] = &interval{role: l.Role, first: ns, last: ns}
			continue
		}
		require.Equal(t, iv.role, l.Role, "two workers wrote with term %d", l.Term)
		iv.first, iv.last = min(iv.first, ns), max(iv.last, ns)
	}
	require.Zero(t, len(rejected), "the fenced store rejected %d writes of a deposed term (first: %s): two workers ran at once", len(rejected), strings.Join(rejected[:min(len(rejected), 3)], "; "))
	terms := make([]uint64, 0, len(byTerm))
	for term := range byTerm {
		terms = append(terms, term)
	}
	slices.Sort(terms)
	require.Len(t, terms, 2, "want the attacker's term and the next worker's")
	att, next := byTerm[terms[0]], byTerm[terms[1]]
	require.Equal(t, "attack", att.role, "the lower term is the attacker's")
	require.Less(t, att.last, next.first, "the attacker's last heartbeat (term %d) came %v after the next worker (term %d) started",
		terms[0], time.Duration(att.last-next.first), terms[1])
	t.Logf("fenced log: attacker term %d for %v, next worker term %d started %v after the attacker's last heartbeat",
		terms[0], time.Duration(att.last-att.first).Round(time.Millisecond), terms[1], time.Duration(next.first-att.last).Round(time.Millisecond))
}

// attackReport is testbin/attacker's report, as far as the test reads it.
type attackReport struct {
	UID     int `json:"uid"`
	OwnRoot int `json:"own_root"`
	Visible int `json:"visible"`
	Targets []struct {
		Pid  int    `json:"pid"`
		Comm string `json:"comm"`
	} `json:"targets"`
	Attempts []struct {
		Action  string `json:"action"`
		Pid     int    `json:"pid"`
		Comm    string `json:"comm"`
		OwnSide bool   `json:"own_side"`
		Path    string `json:"path"`
		OK      bool   `json:"ok"`
		Err     string `json:"err"`
		Detail  string `json:"detail"`
	} `json:"attempts"`
}

func readAttackReport(t *testing.T, path string) attackReport {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep attackReport
	require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
	return rep
}

// succeeded lists the attempts of these actions that worked.
func (r attackReport) succeeded(actions ...string) []string {
	var out []string
	for _, a := range r.Attempts {
		if a.OK && slices.Contains(actions, a.Action) {
			out = append(out, fmt.Sprintf("%s pid %d (%s) %s %s", a.Action, a.Pid, a.Comm, a.Path, a.Detail))
		}
	}
	return out
}

// summary counts what was tried and what worked, per action.
func (r attackReport) summary() string {
	tried, worked := map[string]int{}, map[string]int{}
	for _, a := range r.Attempts {
		tried[a.Action]++
		if a.OK {
			worked[a.Action]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "uid %d, %d processes visible outside its own tree, %d of them fair game\n", r.UID, r.Visible, len(r.Targets))
	for _, act := range []string{"stop", "resume", "open", "write", "environ", "file"} {
		fmt.Fprintf(&b, "  %-8s %d of %d worked\n", act, worked[act], tried[act])
	}
	for _, s := range r.succeeded("stop", "open", "write", "environ", "file") {
		fmt.Fprintf(&b, "  worked: %s\n", s)
	}
	return b.String()
}

// requireReport checks what the attacker says it could do against what the
// case allows.
func (s *attackScene) requireReport(t *testing.T, rep attackReport, a, b *run, hold proctest.Record) {
	t.Helper()
	sum := sha256.Sum256([]byte(s.token))
	for _, at := range rep.Attempts {
		require.NotContains(t, at.Detail, hex.EncodeToString(sum[:]), "the attacker read the bearer token from pid %d (%s)", at.Pid, at.Comm)
	}
	require.Empty(t, rep.succeeded("open", "write"), "the attacker reopened a supervisor-side descriptor")
	require.Empty(t, rep.succeeded("environ"), "the attacker read a supervisor-side environment")
	if !s.c.canStop {
		require.Empty(t, rep.succeeded("stop"), "the attacker stopped a supervisor-side process")
	}
	if !s.c.canTamper {
		require.Empty(t, rep.succeeded("file"), "the attacker changed the local state")
		term, err := os.ReadFile(s.seedTerm)
		require.NoError(t, err)
		require.Equal(t, s.seedTermB, term, "the term counter was rewritten")
		holder, err := os.ReadFile(s.seedHolder)
		require.NoError(t, err)
		require.Equal(t, s.seedHolderB, holder, "the holder record was rewritten")
	}
	// The probe itself must have been real: without a PID namespace the
	// attacker saw both supervisors and A's hold as fair game; with one it
	// saw nothing of them.
	var pids []int
	for _, tg := range rep.Targets {
		pids = append(pids, tg.Pid)
	}
	if s.c.control {
		require.Empty(t, pids, "the control case's attacker was given no fair game")
		return
	}
	if slices.Contains(s.c.iso, "--private-pids") {
		require.Empty(t, pids, "the attacker saw supervisor-side processes from inside its PID namespace")
		return
	}
	for _, want := range []int{a.cmd.Process.Pid, b.cmd.Process.Pid, hold.Pid} {
		require.Contains(t, pids, want, "the attacker did not even see pid %d: the probe tested nothing", want)
	}
}

// writeAtomic writes content to path through a rename, readable by all.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}
