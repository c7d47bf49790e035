package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// F1: the terminal line comes only after both groups are proven empty. Frozen at
// "terminal-contained", every TERM-immune process (worker, its child, hold, its
// descendant) is already dead and stdout still has only leader; resumed, the
// released line carries the proof; SIGKILLed there, nothing more is printed.
func TestF1TerminalOnlyAfterProvenContainment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		sig    syscall.Signal
		code   int
		events []string
	}{
		{"resumed", syscall.SIGCONT, 0, []string{"leader", "released"}},
		{"killed", syscall.SIGKILL, 137, []string{"leader"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				pause:  "terminal-contained",
				worker: "--ignore-signals --child --marker {dir}/marker --marker-after 4s",
				hold: []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "4s",
					"emit:leader,term=7,budget=10000", "waitfile:{dir}/pids", "sleep:200ms", "emit:released,term=7"},
			})
			pid := r.cmd.Process.Pid
			waitStopped(t, pid, bound)
			recs := append(pidsIn(filepath.Join(r.dir, "pids")), pidsIn(filepath.Join(r.dir, "hold.pids"))...)
			require.Len(t, recs, 4, "worker, child, hold and descendant all started")
			requireDeadBy(t, recs, time.Now().Add(time.Second))
			require.Equal(t, []string{"leader"}, r.events(), "terminal line printed before containment was proven")
			require.NoError(t, syscall.Kill(pid, c.sig))
			require.Equal(t, c.code, r.wait(bound), r.stderr())
			require.Equal(t, c.events, r.events())
			if c.sig == syscall.SIGCONT {
				cont := containmentOf(t, r, "released")
				require.GreaterOrEqual(t, cont["killed"], float64(4))
			}
			// The four that would write a marker at 4 s were proven dead
			// above, so none can appear later: no need to wait for 4 s.
			requireNoMarker(t, r.dir)
		})
	}
}

// F2: a cooperative worker gets TERM first and may clean up (it logs "stopped")
// before lost is printed.
func TestF2CooperativeWorkerStopsBeforeLost(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=7,budget=10000", "waitfile:{dir}/pids", "emit:lost,term=7"}})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "lost"}, r.events())
	containmentOf(t, r, "lost")
	recs := pidsIn(filepath.Join(r.dir, "pids"))
	require.Len(t, recs, 1)
	log, err := os.ReadFile(filepath.Join(r.dir, "log"))
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(log), "\n"), "stopped "+strconv.Itoa(recs[0].pid), "the worker's TERM handler ran")
}

// F3: a TERM-immune worker tree - a child, a setsid daemon, a child leading its own
// group and a 20-process tree - survives the TERM phase and is killed after the
// grace; nothing survives, and the teardown took at least the grace.
func TestF3TermImmuneWorkerTree(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		worker: "--ignore-signals --child --grandchild-setsid --child-setpgid --tree 20 --marker {dir}/spawned",
		hold: []string{"emit:leader,term=7,budget=10000", "waitfile:{dir}/spawned", "waitfile:{dir}/spawned.child",
			"waitfile:{dir}/spawned.daemon", "waitfile:{dir}/spawned.pgchild", "emit:lost,term=7"},
	})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "lost"}, r.events())
	cont := containmentOf(t, r, "lost")
	require.GreaterOrEqual(t, cont["killed"], float64(24), "worker, child, daemon, pgchild and 20 tree processes")
	require.GreaterOrEqual(t, cont["duration_ms"], float64(900), "TERM-immune processes are killed only after the grace")
	require.Empty(t, aliveRecorded(pidsIn(filepath.Join(r.dir, "pids"))))
}

// F4: a TERM-immune hold and its TERM-immune descendant are contained like the
// worker before lost is printed; the descendant never writes its marker.
func TestF4TermImmuneHold(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		hold: []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "4s",
			"emit:leader,term=7,budget=10000", "waitfile:{dir}/pids", "emit:lost,term=7"},
	})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "lost"}, r.events())
	cont := containmentOf(t, r, "lost")
	require.GreaterOrEqual(t, cont["killed"], float64(3), "worker, hold and its descendant")
	holds := pidsIn(filepath.Join(r.dir, "hold.pids"))
	require.Len(t, holds, 2)
	require.Empty(t, aliveRecorded(holds), "lost printed while the hold group lived")
	// Time must pass until the markers are due (4 s): only the hold's
	// processes are proven dead here.
	time.Sleep(time.Until(r.began.Add(4500 * time.Millisecond)))
	requireNoMarker(t, r.dir)
}

// F5: a TERM-immune fork storm of 300 processes inside the worker's group is
// stopped and killed to the last process; nothing forks on afterwards.
func TestF5ForkStorm(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		worker: "--ignore-signals --storm 300 --marker {dir}/spawned",
		hold:   []string{"emit:leader,term=7,budget=10000", "waitfile:{dir}/spawned.storm", "sleep:300ms", "emit:lost,term=7"},
	})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "lost"}, r.events())
	containmentOf(t, r, "lost")
	pids := filepath.Join(r.dir, "pids")
	n := len(pidsIn(pids))
	require.Greater(t, n, 1, "the storm started")
	require.Empty(t, aliveRecorded(pidsIn(pids)))
	// Time must pass: a storm process that escaped would fork on meanwhile.
	time.Sleep(500 * time.Millisecond)
	require.Len(t, pidsIn(pids), n, "a storm process kept forking after lost")
	require.Empty(t, aliveRecorded(pidsIn(pids)))
}

// F6: the worker group's shim (its root process) is SIGKILLed while the
// TERM-immune worker and its child run: they re-parent to the guardian, which must
// kill them at once - not when the run ends - and the supervisor exits 70. The
// hold ignores the release request so a late teardown would show. The window it
// guards is a race inside the guardian, so three runs go at once.
func TestF6WorkerShimKilled(t *testing.T) {
	t.Parallel()
	for i := 1; i <= 3; i++ {
		t.Run("run "+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				kind:   "lock",
				flags:  []string{"--release-timeout", "1500ms"},
				worker: "--ignore-signals --child",
				hold:   []string{"--on-term", "none", "emit:acquired,term=7,budget=10000"},
			})
			r.waitEvent("acquired", bound)
			g := guardianOf(t, r.cmd.Process.Pid)
			members := waitPidLines(t, filepath.Join(r.dir, "pids"), 2, 5*time.Second)
			var worker recorded
			for _, m := range members {
				if m.role == "worker" {
					worker = m
				}
			}
			require.NotZero(t, worker.pid)
			pr := platform.NewProcReader()
			wp, err := pr.Stat(worker.pid)
			require.NoError(t, err)
			shim, err := pr.Stat(wp.PPid)
			require.NoError(t, err)
			require.Equal(t, g, shim.PPid, "the worker's parent is a shim below the guardian")
			require.Contains(t, platform.Cmdline(shim.Pid), "__octostore-shim")

			killed := time.Now()
			require.NoError(t, syscall.Kill(shim.Pid, syscall.SIGKILL))
			survivors := survivorsAt(members, killed.Add(time.Second))
			require.Equal(t, 70, r.wait(bound), r.stderr())
			require.Empty(t, survivors, "the shim's orphans were still alive 1 s after it was killed (the run ended %v after); stderr:\n%s", time.Since(killed), r.stderr())
			require.Contains(t, r.stderr(), "the process rooting the worker group died unexpectedly")
			require.Equal(t, []string{"acquired"}, r.events())
		})
	}
}

// F7: a hold that exits, or closes its stdout and keeps running, without a
// terminal event ends the run with 70; nothing beyond what preceded is printed and
// both groups are contained.
func TestF7HoldEndsWithoutTerminalEvent(t *testing.T) {
	t.Parallel()
	leader := "emit:leader,term=7,budget=10000"
	cases := []struct {
		name   string
		hold   []string
		events []string
		worker bool // the worker had started
	}{
		{"silent exit 0", []string{"exit:0"}, nil, false},
		{"silent exit 3", []string{"exit:3"}, nil, false},
		{"exit after waiting", []string{"emit:waiting", "exit:0"}, []string{"waiting"}, false},
		{"stdout closed before any event", []string{"closeout"}, nil, false},
		{"exit 0 after leader", []string{leader, "waitfile:{dir}/pids", "exit:0"}, []string{"leader"}, true},
		{"stdout closed after leader", []string{leader, "waitfile:{dir}/pids", "closeout"}, []string{"leader"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{worker: "--ignore-signals --child", hold: c.hold})
			require.Equal(t, 70, r.wait(bound), r.stderr())
			require.Contains(t, r.stderr(), "without a terminal event")
			require.Equal(t, c.events, r.events())
			if !c.worker {
				requireNeverRan(t, r)
			}
			recs := append(pidsIn(filepath.Join(r.dir, "pids")), pidsIn(filepath.Join(r.dir, "hold.pids"))...)
			require.Empty(t, aliveRecorded(recs))
		})
	}
}
