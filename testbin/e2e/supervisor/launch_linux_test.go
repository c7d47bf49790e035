package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// D1 (real server, cancel on uncertainty) needs the hold client and is covered
// with it; every other scenario of group D is here.

// D2: with readiness required, leader is printed only after the worker created its
// ready file, and promptly after; a SIGTERM then contains the worker, lets the hold
// release and exits 143 with the hold's released line.
func TestD2RequiredReadiness(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		env   []string
		flags []string
	}{
		{"environment", []string{"OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=1"}, nil},
		{"flag", nil, []string{"--require-worker-ready"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				env:    c.env,
				flags:  c.flags,
				worker: "--term-exits --env-out {dir}/env --touch-ready --ready-after 1s",
				hold:   []string{"emit:leader,term=7,budget=8000"},
			})
			waitFile(t, filepath.Join(r.dir, "env"), 5*time.Second)
			ready := envValueIn(t, filepath.Join(r.dir, "env"), "OCTOSTORE_SUPERVISOR_READY_FILE")
			require.NotEmpty(t, ready)

			// stdout is read before the file is looked at, so a leader seen while the
			// file is still missing was printed before the worker was ready.
			proctest.WaitFor(t, 5*time.Second, "the worker to create its ready file", func() bool {
				printed := r.out.String() != ""
				_, err := os.Lstat(ready)
				if printed {
					require.NoError(t, err, "leader printed before the worker created its ready file: %s", r.out.String())
				}
				return err == nil
			})
			r.waitEvent("leader", 2*time.Second)

			require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 143, r.wait(bound), r.stderr())
			require.Equal(t, []string{"leader", "released"}, r.events())
			containmentOf(t, r, "released")
			log, err := os.ReadFile(filepath.Join(r.dir, "log"))
			require.NoError(t, err)
			require.Contains(t, string(log), "stopped ", "the worker's TERM handler ran")
		})
	}
}

// D3: a worker that never signals readiness is stopped at the ready timeout: 20,
// nothing printed, the worker (which did start) and its child contained.
func TestD3ReadinessNeverArrives(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		env:    []string{"OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=1"},
		flags:  []string{"--ready-timeout", "1s"},
		worker: "--ignore-signals --child",
		hold:   []string{"emit:leader,term=7,budget=20000"},
	})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "worker process did not acknowledge application readiness")
	require.Empty(t, r.events())
	require.NotEmpty(t, pidsIn(filepath.Join(r.dir, "pids")), "the worker started")
	require.Empty(t, aliveRecorded(pidsIn(filepath.Join(r.dir, "pids"))))
}

// D4: the supervisor frozen at the launch gate (deadline armed, worker not started)
// past the deadline: the guardian closes the gated worker group on its own clock,
// the worker never runs, and the resumed supervisor exits 20.
func TestD4FrozenAtLaunchGate(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		kind:   "lock",
		pause:  "pre-start",
		worker: "--marker {dir}/marker",
		hold:   []string{"emit:acquired,term=7,budget=1600"},
	})
	pid := r.cmd.Process.Pid
	waitStopped(t, pid, 5*time.Second)
	g := guardianOf(t, pid)
	frozen := time.Now()
	// TERM was due at +350 ms, KILL at +1350 ms: by 2.1 s into the freeze
	// (and a second's slack) the worker's group is gone.
	requireOnlyHoldShim(t, r, g, time.Until(frozen.Add(3100*time.Millisecond)))
	// Time must pass: the scenario resumes the supervisor only after its
	// deadline (+1600 ms), when arming must be refused.
	time.Sleep(time.Until(frozen.Add(2100 * time.Millisecond)))
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "authority could not be armed before worker start")
	require.Empty(t, r.events())
	requireNeverRan(t, r)
	requireNoMarker(t, r.dir)
}

// D5: the supervisor SIGKILLed at the launch gate: the guardian contains the
// TERM-immune hold and its descendant and the empty worker group within 3 s, and
// the worker never runs.
func TestD5KilledAtLaunchGate(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		kind:  "lock",
		pause: "pre-start",
		hold: []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "3s",
			"emit:acquired,term=7,budget=10000"},
	})
	pid := r.cmd.Process.Pid
	waitStopped(t, pid, 5*time.Second)
	g := guardianOf(t, pid)
	holds := waitPidLines(t, filepath.Join(r.dir, "hold.pids"), 2, 5*time.Second)
	killed := time.Now()
	require.NoError(t, r.cmd.Process.Kill())
	require.Equal(t, 137, r.wait(bound))
	requireDeadBy(t, holds, killed.Add(3*time.Second))
	requireSessionEmptyBy(t, g, killed.Add(3*time.Second))
	requireNeverRan(t, r)
	require.Empty(t, r.events())
	// The hold's descendant, the one process that would write a marker (at
	// 3 s), is dead (holds), so none can appear later: no need to wait.
	requireNoMarker(t, r.dir)
}

// D6: a worker that exits on its own while authority is live is a completion: its
// group is contained, the hold is asked to release, and the hold's released line is
// printed with worker_exit_code. Exit 0 only for a clean worker exit and a confirmed
// release; anything else is 70.
func TestD6WorkerExitsWhileAuthorityLive(t *testing.T) {
	t.Parallel()
	leader := "emit:leader,term=7,budget=10000"
	cases := []struct {
		name     string
		worker   string
		hold     []string
		flags    []string
		code     int
		events   []string
		exitCode int    // worker_exit_code on the released line
		stderr   string // substring, "" for none required
	}{
		{"clean exit", "--exit 0 --exit-after 200ms", []string{leader}, nil, 0, []string{"leader", "released"}, 0, ""},
		{"failed exit", "--exit 3 --exit-after 200ms", []string{leader}, nil, 70, []string{"leader", "released"}, 3, ""},
		{"clean exit leaves a TERM-immune child", "--ignore-signals --child --exit 0 --exit-after 200ms", []string{leader}, nil, 0, []string{"leader", "released"}, 0, ""},
		{"hold exits without releasing", "--exit 0 --exit-after 200ms", []string{"--on-term", "exit", leader}, nil, 70, []string{"leader"}, 0, "did not confirm the release"},
		{"TERM-immune hold", "--exit 0 --exit-after 200ms", []string{"--ignore-signals", leader}, []string{"--release-timeout", "500ms"}, 70, []string{"leader"}, 0, "did not confirm the release"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{worker: c.worker, hold: c.hold, flags: c.flags})
			require.Equal(t, c.code, r.wait(bound), r.stderr())
			require.Equal(t, c.events, r.events())
			if c.stderr != "" {
				require.Contains(t, r.stderr(), c.stderr)
			}
			if len(c.events) > 1 {
				containmentOf(t, r, "released")
				require.EqualValues(t, c.exitCode, r.line("released")["worker_exit_code"])
				require.EqualValues(t, 7, r.line("released")["term"])
			}
			require.Empty(t, aliveRecorded(pidsIn(filepath.Join(r.dir, "pids"))))
		})
	}
}

// D7: the worker gets the fencing term of the authority event that started it, for
// elections (leader) and locks (acquired).
func TestD7FencingTermHandedToWorker(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"election", "lock"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ev := map[string]string{"election": "leader", "lock": "acquired"}[kind]
			r := start(t, sc{
				kind:   kind,
				worker: "--term-exits --env-out {dir}/env",
				hold:   []string{"emit:" + ev + ",term=17,budget=10000", "waitfile:{dir}/env", "emit:released,term=17"},
			})
			require.Equal(t, 0, r.wait(bound), r.stderr())
			require.Equal(t, []string{ev, "released"}, r.events())
			require.EqualValues(t, 17, r.line(ev)["term"])
			require.Equal(t, "17", envValueIn(t, filepath.Join(r.dir, "env"), "OCTOSTORE_FENCING_TERM"))
			log, err := os.ReadFile(filepath.Join(r.dir, "log"))
			require.NoError(t, err)
			require.Regexp(t, `^started \d+ term 17\n`, string(log))
		})
	}
}

// containmentOf returns the containment object of a printed terminal line after
// checking it claims proven emptiness by the backend the run was meant to use.
func containmentOf(t *testing.T, r *run, event string) map[string]any {
	t.Helper()
	c, ok := r.line(event)["containment"].(map[string]any)
	require.True(t, ok, "%s line without a containment object: %s", event, r.out.String())
	require.Equal(t, true, c["proven_empty"])
	require.Equal(t, wantBackend(r.sc), c["backend"])
	return c
}

// envValueIn reads KEY's value from a file written by escaper --env-out.
func envValueIn(t *testing.T, path, key string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	t.Fatalf("%s not in %s", key, path)
	return ""
}

// waitPidLines waits until a pidfile holds at least n lines and returns them.
func waitPidLines(t *testing.T, path string, n int, limit time.Duration) []recorded {
	t.Helper()
	var recs []recorded
	if !proctest.Until(limit, func() bool { recs = pidsIn(path); return len(recs) >= n }) {
		t.Fatalf("%s has %d of %d lines after %v", path, len(recs), n, limit)
	}
	return recs
}

// requireDeadBy polls until every recorded process is dead, failing at deadline.
func requireDeadBy(t *testing.T, recs []recorded, deadline time.Time) {
	t.Helper()
	require.NotEmpty(t, recs)
	if alive := survivorsAt(recs, deadline); len(alive) > 0 {
		for _, a := range alive {
			t.Errorf("still alive: pid %d (%s) %s", a.pid, a.role, platform.Cmdline(a.pid))
		}
		t.FailNow()
	}
}

// survivorsAt polls until every recorded process is dead or deadline passes and
// returns those still alive then.
func survivorsAt(recs []recorded, deadline time.Time) []recorded {
	var alive []recorded
	proctest.Until(time.Until(deadline), func() bool {
		alive = aliveRecorded(recs)
		return len(alive) == 0
	})
	return alive
}

// requireSessionEmptyBy polls until nothing in the guardian's session (guardian,
// shims, hold, worker and whatever stayed with them) can still run.
func requireSessionEmptyBy(t *testing.T, sid int, deadline time.Time) {
	t.Helper()
	pr := platform.NewProcReader()
	var alive []platform.Proc
	if proctest.Until(time.Until(deadline), func() bool {
		alive = nil
		pids, _ := pr.Pids(nil)
		for _, pid := range pids {
			if p, err := pr.Stat(pid); err == nil && p.Sid == sid && !p.Dead() {
				alive = append(alive, p)
			}
		}
		return len(alive) == 0
	}) {
		return
	}
	for _, p := range alive {
		t.Errorf("still alive in the guardian's session: pid %d %s", p.Pid, platform.Cmdline(p.Pid))
	}
	t.FailNow()
}

// shimsBelow lists the live group shims under the guardian.
func shimsBelow(guardian int) []platform.Proc {
	var out []platform.Proc
	for _, c := range children(guardian) {
		if strings.Contains(platform.Cmdline(c.Pid), "__octostore-shim") {
			out = append(out, c)
		}
	}
	return out
}

// requireOnlyHoldShim asserts (allowing limit for the teardown to finish) that the
// worker group's shim is gone and only the hold's remains under the guardian.
func requireOnlyHoldShim(t *testing.T, r *run, guardian int, limit time.Duration) {
	t.Helper()
	holds := pidsIn(filepath.Join(r.dir, "hold.pids"))
	require.NotEmpty(t, holds)
	hold, err := platform.NewProcReader().Stat(holds[0].pid)
	require.NoError(t, err)
	var shims []platform.Proc
	if !proctest.Until(limit, func() bool {
		shims = shimsBelow(guardian)
		return len(shims) == 1 && shims[0].Pid == hold.PPid
	}) {
		t.Fatalf("guardian %d has shims %v; want only the hold's (%d)", guardian, shims, hold.PPid)
	}
}
