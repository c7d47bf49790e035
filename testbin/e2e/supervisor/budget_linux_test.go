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
)

// C1, C3, C4, C6: an authority that is not fresh or not usable never starts the
// worker and ends in 20.
func TestCUnusableAuthorityNeverStartsWorker(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, kind, leader, want string
	}{
		{"C1 budget 999 ms", "lock", "emit:acquired,term=7,budget=999", "without a usable remaining safety budget"},
		{"C3 emitted in the future", "election", "emit:leader,term=7,budget=5000,future=60000", "without a fresh safety budget"},
		{"C4 budget above maximum", "election", "emit:leader,term=7,budget=300001", "without a fresh safety budget"},
		// The same as the reference's pause before the first read: the event spent
		// 2.1 s of its 1.6 s budget queued in the pipe.
		{"C6 expired in the event pipe", "election", "emit:leader,term=7,budget=1600,wall_age=2100,cont_age=2100", "without a fresh safety budget"},
		{"continuous clock shows age", "election", "emit:leader,term=7,budget=1600,cont_age=2100", "without a fresh safety budget"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{kind: c.kind, worker: "--child", hold: []string{c.leader, "emit:uncertain"}})
			require.Equal(t, 20, r.wait(bound), r.stderr())
			require.Contains(t, r.stderr(), c.want)
			require.Empty(t, r.events())
			requireNeverRan(t, r)
		})
	}
}

// C7: authority that expires while the supervisor is frozen before arming is
// refused by the guardian; nothing runs.
func TestC7ExpiresBeforeArming(t *testing.T) {
	t.Parallel()
	r := start(t, sc{pause: "pre-arm", worker: "--child", hold: []string{"emit:leader,term=7,budget=2600"}})
	// The supervisor must really be frozen there: a process that already
	// exited counts as stopped too. (Under load a smaller budget was already
	// too stale to reach the pause at all.)
	proctest.WaitFor(t, bound, "the supervisor to pause before arming", func() bool {
		return strings.Contains(r.stderr(), "testhook: pausing at pre-arm")
	})
	waitStopped(t, r.cmd.Process.Pid, 5*time.Second)
	// Time must pass: the authority expires while the supervisor is frozen.
	time.Sleep(3100 * time.Millisecond)
	require.NoError(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "authority could not be armed before worker start")
	requireNeverRan(t, r)
}

// C8: a pause before arming must not move the deadline: it stays pinned to the
// emission (+2750 ms TERM, +3750 ms KILL for 4000 ms), so a TERM-immune worker that
// would write a marker 3 s after starting (at ~4.2 s) never does.
func TestC8PauseDoesNotMoveDeadline(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		pause:  "pre-arm",
		flags:  []string{"--release-timeout", "500ms"},
		worker: "--ignore-signals --marker {dir}/marker --marker-after 3s",
		hold:   []string{"--ignore-signals", "emit:leader,term=7,budget=4000"},
	})
	pid := r.cmd.Process.Pid
	waitStopped(t, pid, 5*time.Second)
	paused := time.Now()
	// Time must pass: the pause is the scenario (the deadline must not move).
	time.Sleep(1200 * time.Millisecond)
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	waitFile(t, filepath.Join(r.dir, "log"), time.Second) // started within 1 s of release
	require.Equal(t, 20, r.wait(bound))
	require.Less(t, time.Since(paused), 8*time.Second)
	requireNoMarker(t, r.dir)
}

// C9: a wall clock behind the continuous clock cannot stretch the deadline, and a
// SIGKILLed supervisor leaves the guardian to contain both groups at once.
func TestC9SkewedInitialDeadlineSurvivesSupervisorCrash(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		worker: "--ignore-signals --child --marker {dir}/marker --marker-after 3200ms",
		hold:   []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "3200ms", "emit:leader,term=7,budget=5000,wall_age=1000,cont_age=2000"},
	})
	r.waitEvent("leader", 5*time.Second)
	began := time.Now()
	require.NoError(t, r.cmd.Process.Kill())
	require.Equal(t, 137, r.wait(bound))
	requireAllDeadWithin(t, r.dir, 4*time.Second-time.Since(began))
	// Time must pass until the markers are due (3.2 s): a process not recorded
	// by now could still write one.
	time.Sleep(time.Until(began.Add(3500 * time.Millisecond)))
	requireNoMarker(t, r.dir)
}

// C10: the same for a skewed renewal, with the supervisor SIGKILLed right after the
// guardian acknowledged the renewal.
func TestC10SkewedRenewalSurvivesSupervisorCrash(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		pause:  "renewal-armed",
		worker: "--ignore-signals --child --marker {dir}/marker --marker-after 3500ms",
		hold:   []string{"--ignore-signals", "emit:leader,term=7,budget=8000", "waitfile:{dir}/log", "emit:renewed,term=7,budget=5000,wall_age=1000,cont_age=2000"},
	})
	waitStopped(t, r.cmd.Process.Pid, 5*time.Second)
	require.NoError(t, r.cmd.Process.Kill())
	require.Equal(t, 137, r.wait(bound))
	requireAllDeadWithin(t, r.dir, 4*time.Second)
	requireNoMarker(t, r.dir)
}

// C11: a tight but usable budget (2500 ms: TERM +1250, KILL +2250) with a
// TERM-immune worker whose marker would appear at 2.6 s.
func TestC11TightBudgetTermImmuneWorker(t *testing.T) {
	t.Parallel()
	r := start(t, sc{kind: "lock", worker: "--ignore-signals --marker {dir}/marker --marker-after 2600ms", hold: []string{"emit:acquired,term=7,budget=2500"}})
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"acquired"}, r.events())
	require.Len(t, pidsIn(r.dir+"/pids"), 1, "the worker started")
	// Time must pass: the marker would appear 2.6 s after the worker started.
	time.Sleep(500 * time.Millisecond)
	requireNoMarker(t, r.dir)
}

// C12: a silent lock hold is cut off by the silence cap (2 s), not by its 23 s
// budget; the worker saw the fencing term.
func TestC12SilentLockHoldSilenceCap(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		kind:   "lock",
		env:    []string{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=2", "OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS=1"},
		worker: "--ignore-signals --child --env-out {dir}/env",
		hold:   []string{"emit:acquired,term=17,budget=23000"},
	})
	require.Equal(t, 20, r.wait(bound))
	require.Less(t, time.Since(r.began), 6*time.Second)
	env, err := os.ReadFile(filepath.Join(r.dir, "env"))
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(env), "\n"), "OCTOSTORE_FENCING_TERM=17")
}

// C13: long election TTLs renew and release cleanly; the lock-only silence cap is
// ignored for elections.
func TestC13HealthyLongTTLElections(t *testing.T) {
	t.Parallel()
	for _, budget := range []string{"60000", "300000"} {
		t.Run(budget, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				env:  []string{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS=1"},
				hold: []string{"emit:leader,term=3,budget=" + budget, "sleep:1200ms", "emit:renewed,term=3,budget=" + budget, "sleep:1200ms", "emit:released,term=3"},
			})
			require.Equal(t, 0, r.wait(bound), r.stderr())
			require.Equal(t, []string{"leader", "renewed", "released"}, r.events())
			require.Less(t, time.Since(r.began), 7*time.Second)
		})
	}
}

// C14: a silent election hold: contained around +1.75/+2.75 s, only leader printed.
func TestC14SilentElectionHold(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --tree 20", hold: []string{"emit:leader,term=7,budget=3000"}})
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"leader"}, r.events())
	require.Contains(t, r.stderr(), "authority deadline passed")
}

// C15: a renewal without its timestamps cannot replace the deadline.
func TestC15RenewalWithoutTimestamps(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=7,budget=8000", "waitfile:{dir}/log",
		"emit:renewed,term=7,budget=5000,drop=authority_observed_unix_ms,drop=authority_observed_continuous_ms"}})
	require.Equal(t, 20, r.wait(bound))
	require.Contains(t, r.stderr(), "renewed authority could not replace the active deadline")
	require.Equal(t, []string{"leader"}, r.events())
}

// requireAllDeadWithin polls until every recorded process is dead.
func requireAllDeadWithin(t *testing.T, dir string, limit time.Duration) {
	t.Helper()
	recs := append(pidsIn(filepath.Join(dir, "pids")), pidsIn(filepath.Join(dir, "hold.pids"))...)
	require.NotEmpty(t, recs)
	if alive := survivorsAt(recs, time.Now().Add(limit)); len(alive) > 0 {
		t.Fatalf("%d recorded processes still alive after %v: %v", len(alive), limit, alive)
	}
}
