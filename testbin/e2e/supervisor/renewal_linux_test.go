package supervisor

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// E1: a renewal that shortens the deadline (5000 ms -> 1600 ms: TERM +350 ms, KILL
// +1350 ms after the renewal) is enforced by the guardian even while the supervisor
// is frozen right after the guardian acknowledged it. The TERM-immune worker's
// marker (2.5 s after it started) would appear before the old deadline's TERM
// (+3750 ms after leader), so only the new deadline can prevent it. Resumed after
// the deadline passed, the supervisor must not report the renewal it can no
// longer stand behind: 20 and only leader printed.
func TestE1ShorterRenewalEnforcedWhileFrozen(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		pause:  "renewal-armed",
		worker: "--ignore-signals --marker {dir}/marker --marker-after 2500ms",
		hold:   []string{"emit:leader,term=7,budget=5000", "waitfile:{dir}/pids", "emit:renewed,term=7,budget=1600"},
	})
	pid := r.cmd.Process.Pid
	waitStopped(t, pid, 5*time.Second)
	g := guardianOf(t, pid)
	frozen := time.Now()
	// The guardian contains the worker on its own clock; by 2.3 s into the
	// freeze (and a second's slack) it must have, and closed its group.
	requireDeadBy(t, waitPidLines(t, filepath.Join(r.dir, "pids"), 1, bound), frozen.Add(3300*time.Millisecond))
	requireOnlyHoldShim(t, r, g, time.Until(frozen.Add(3300*time.Millisecond)))
	requireNoMarker(t, r.dir)
	// Time must pass: the scenario resumes the supervisor only after the
	// renewal's deadline, which it must then not report.
	time.Sleep(time.Until(frozen.Add(2300 * time.Millisecond)))
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader"}, r.events(), "renewed printed after its deadline had already expired")
	requireNoMarker(t, r.dir)
}

// E2: the supervisor frozen after validating a renewal but before arming it: the
// old deadline (3500 ms: TERM +2250, KILL +3250) still fires on the guardian's
// clock and contains the TERM-immune worker and its child before their markers
// (4 s). The late arming is refused: 20, renewed never printed.
func TestE2OldDeadlineWinsWhileRenewalUnarmed(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		pause:  "pre-renew-arm",
		worker: "--ignore-signals --child --marker {dir}/marker --marker-after 4s",
		hold:   []string{"emit:leader,term=7,budget=3500", "waitfile:{dir}/pids", "emit:renewed,term=7,budget=5000"},
	})
	pid := r.cmd.Process.Pid
	waitStopped(t, pid, 5*time.Second)
	g := guardianOf(t, pid)
	frozen := time.Now()
	// The old deadline fires on the guardian's clock; by 4.5 s into the
	// freeze (and a second's slack) the worker and its child are dead and
	// their group closed.
	requireDeadBy(t, waitPidLines(t, filepath.Join(r.dir, "pids"), 2, bound), frozen.Add(5500*time.Millisecond))
	requireOnlyHoldShim(t, r, g, time.Until(frozen.Add(5500*time.Millisecond)))
	requireNoMarker(t, r.dir)
	// Time must pass: the scenario resumes the supervisor only after the old
	// deadline, when arming the renewal must be refused.
	time.Sleep(time.Until(frozen.Add(4500 * time.Millisecond)))
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "renewed authority could not replace the active deadline")
	require.Equal(t, []string{"leader"}, r.events())
	requireNoMarker(t, r.dir)
}

// E3: the same freeze, but the supervisor is SIGKILLed: the guardian contains both
// groups (TERM-immune worker with a child, TERM-immune hold with a descendant) on
// its own; nothing lives to write a marker at 4 s.
func TestE3SupervisorKilledDuringRenewal(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		pause:  "pre-renew-arm",
		worker: "--ignore-signals --child --marker {dir}/marker --marker-after 4s",
		hold: []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "4s",
			"emit:leader,term=7,budget=3500", "waitfile:{dir}/pids", "emit:renewed,term=7,budget=5000"},
	})
	pid := r.cmd.Process.Pid
	waitStopped(t, pid, 5*time.Second)
	g := guardianOf(t, pid)
	recs := append(waitPidLines(t, filepath.Join(r.dir, "pids"), 2, 5*time.Second), waitPidLines(t, filepath.Join(r.dir, "hold.pids"), 2, 5*time.Second)...)
	require.NoError(t, r.cmd.Process.Kill())
	require.Equal(t, 137, r.wait(bound))
	requireDeadBy(t, recs, r.began.Add(4500*time.Millisecond))
	requireSessionEmptyBy(t, g, r.began.Add(4500*time.Millisecond))
	require.Equal(t, []string{"leader"}, r.events())
	// Every process that would write a marker at 4 s is dead (recs), so none
	// can appear later: no need to wait for 4 s.
	requireNoMarker(t, r.dir)
}

// E4: a renewal that arrives after the worker exited is not reported: the worker's
// exit already ended the run as a completion (contain, ask the hold to release),
// so the renewal is read while waiting for the release and never printed. The
// hold here ignores the release request and sends renewed, then released.
func TestE4RenewalAfterWorkerExited(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		worker string
		code   int
		exit   int
	}{
		{"clean exit", "--exit 0 --exit-after 100ms", 0, 0},
		{"failed exit", "--exit 4 --exit-after 100ms", 70, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				worker: c.worker,
				hold: []string{"--on-term", "none", "emit:leader,term=7,budget=10000", "waitfile:{dir}/log", "sleep:1s",
					"emit:renewed,term=7,budget=10000", "emit:released,term=7", "exit:0"},
			})
			require.Equal(t, c.code, r.wait(bound), r.stderr())
			require.Equal(t, []string{"leader", "released"}, r.events())
			containmentOf(t, r, "released")
			require.EqualValues(t, c.exit, r.line("released")["worker_exit_code"])
		})
	}
}
