package supervisor

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// H1: the caller's whole process group is SIGKILLed before authority; the
// guardian (its own session) still contains the TERM-immune hold and its child.
func TestH1CallerGroupKilledBeforeAuthority(t *testing.T) {
	t.Parallel()
	r := start(t, sc{setpgid: true, hold: []string{"--ignore-signals", "--descendant-marker", "{dir}/hold-child-ran", "--descendant-after", "1h", "emit:waiting"}})
	r.waitEvent("waiting", 5*time.Second)
	waitRecorded(t, r.dir+"/hold.pids", 2)
	require.NoError(t, syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL))
	require.Equal(t, 137, r.wait(bound))
	requireAllDeadWithin(t, r.dir, 3*time.Second)
	requireNeverRan(t, r)
}

// H2: the same after the worker started; descendants that would write markers at
// 3 s never do.
func TestH2CallerGroupKilledAfterWorkerStart(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		setpgid: true,
		worker:  "--ignore-signals --child --marker {dir}/marker --marker-after 3s",
		hold:    []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "3s", "emit:leader,term=4,budget=5000"},
	})
	r.waitEvent("leader", 5*time.Second)
	waitRecorded(t, r.dir+"/pids", 2)
	require.NoError(t, syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL))
	require.Equal(t, 137, r.wait(bound))
	requireAllDeadWithin(t, r.dir, 3*time.Second)
	// Time must pass until the markers are due (3 s): a process not recorded
	// by now could still write one.
	time.Sleep(time.Until(r.began.Add(3500 * time.Millisecond)))
	requireNoMarker(t, r.dir)
}

// H3: the supervisor is frozen from the moment it printed leader; the guardian's
// own clock contains the worker (TERM +2750, KILL +3750 for 4000 ms); then the
// frozen supervisor is killed and the guardian contains the hold too.
func TestH3FrozenSupervisorThenKilled(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		worker: "--ignore-signals --child --marker {dir}/marker --marker-after 4300ms",
		hold:   []string{"--ignore-signals", "--descendant-marker", "{dir}/marker.hold", "--descendant-after", "6s", "emit:leader,term=4,budget=4000"},
	})
	r.waitEvent("leader", 5*time.Second)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGSTOP))
	waitRecorded(t, r.dir+"/pids", 2)
	workers := pidsIn(r.dir + "/pids")
	proctest.WaitFor(t, 6*time.Second, "the guardian to contain the worker while the supervisor is frozen", func() bool {
		return len(aliveRecorded(workers)) == 0
	})
	require.NoError(t, r.cmd.Process.Kill())
	require.Equal(t, 137, r.wait(bound))
	requireAllDeadWithin(t, r.dir, 3*time.Second)
	// Time must pass until the worker's marker is due (4.3 s): a process not
	// recorded by now could still write one.
	time.Sleep(time.Until(r.began.Add(4600 * time.Millisecond)))
	requireNoMarker(t, r.dir)
}

// H4: the guardian is frozen past the kill deadline (2600 ms: TERM +1350, KILL
// +2350); on waking it kills at once, without granting a fresh grace. The
// supervisor is frozen first and resumed last: awake, it would see its
// guardian stopped and contain everything itself at once
// (TestStoppedGuardianNoticedAndContained).
func TestH4GuardianFrozenPastKillDeadline(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --child", hold: []string{"emit:leader,term=4,budget=2600"}})
	r.waitEvent("leader", 5*time.Second)
	sup := r.cmd.Process.Pid
	g := guardianOf(t, sup)
	waitRecorded(t, r.dir+"/pids", 2)
	require.NoError(t, syscall.Kill(sup, syscall.SIGSTOP))
	waitStopped(t, sup, 5*time.Second)
	require.NoError(t, syscall.Kill(g, syscall.SIGSTOP))
	// Time must pass: the guardian stays frozen past its kill deadline (+2350 ms).
	time.Sleep(time.Until(r.began.Add(3 * time.Second)))
	require.NoError(t, syscall.Kill(g, syscall.SIGCONT))
	resumed := time.Now()
	workers := pidsIn(r.dir + "/pids")
	if alive := survivorsAt(workers, resumed.Add(2*time.Second)); len(alive) > 0 {
		t.Fatalf("no fresh grace after the kill deadline, yet %v lived 2 s after the guardian woke", alive)
	}
	require.NoError(t, syscall.Kill(sup, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader"}, r.events())
}

// H5: the guardian is SIGKILLed; the supervisor contains everything itself, and
// only then prints a synthesized uncertain (authority was active) and exits 20.
func TestH5GuardianKilledMainFallback(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		pause:  "terminal-contained",
		worker: "--ignore-signals --child",
		hold:   []string{"--ignore-signals", "--descendant-marker", "{dir}/hold-child-ran", "--descendant-after", "1h", "emit:leader,term=9,budget=10000"},
	})
	r.waitEvent("leader", 5*time.Second)
	waitRecorded(t, r.dir+"/pids", 2)
	require.NoError(t, syscall.Kill(guardianOf(t, r.cmd.Process.Pid), syscall.SIGKILL))
	waitStopped(t, r.cmd.Process.Pid, 10*time.Second)
	// Frozen after containment and before the terminal line.
	requireAllDeadWithin(t, r.dir, time.Second)
	require.Equal(t, []string{"leader"}, r.events())
	require.NoError(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"leader", "uncertain"}, r.events())
	u := r.line("uncertain")
	require.EqualValues(t, 9, u["term"])
	require.EqualValues(t, 2, u["sequence"])
	require.Equal(t, "guardian_lost", u["reason_code"])
	require.Contains(t, r.stderr(), "main-process fallback")
	// The fallback's proof is said too, as on every path that proves the tree gone.
	require.Contains(t, r.stderr(), "worker group proven empty at ")
}

// H5 before authority: guardian loss with nothing to vouch for is 70.
func TestH5GuardianKilledBeforeAuthority(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting"}})
	r.waitEvent("waiting", 5*time.Second)
	require.NoError(t, syscall.Kill(guardianOf(t, r.cmd.Process.Pid), syscall.SIGKILL))
	require.Equal(t, 70, r.wait(bound))
	require.Equal(t, []string{"waiting"}, r.events())
}

// H7: the supervisor and the guardian are both SIGKILLed. The reference leaked
// everything here; our shims see their guardian go and kill their own trees.
func TestH7SupervisorAndGuardianKilled(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		worker: "--ignore-signals --grandchild-setsid --tree 10",
		hold:   []string{"--ignore-signals", "--descendant-marker", "{dir}/hold-child-ran", "--descendant-after", "1h", "emit:leader,term=4,budget=20000"},
	})
	r.waitEvent("leader", 5*time.Second)
	waitRecorded(t, r.dir+"/pids", 12)
	g := guardianOf(t, r.cmd.Process.Pid)
	require.NoError(t, r.cmd.Process.Kill())
	require.NoError(t, syscall.Kill(g, syscall.SIGKILL))
	require.Equal(t, 137, r.wait(bound))
	requireAllDeadWithin(t, r.dir, 3*time.Second)
}

// H8: the guardian is frozen and the hold is silent; the supervisor notices the
// frozen guardian (the kernel reports its child stopped; before issue 10 it was
// its backstop timer after the deadline passed unenforced), kills the guardian
// and contains everything.
func TestH8GuardianFrozenSilentHold(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --child", hold: []string{"emit:leader,term=4,budget=3000"}})
	r.waitEvent("leader", 5*time.Second)
	require.NoError(t, syscall.Kill(guardianOf(t, r.cmd.Process.Pid), syscall.SIGSTOP))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "the guardian was stopped and can enforce nothing")
	require.Equal(t, []string{"leader", "uncertain"}, r.events())
}

// waitRecorded waits until a pidfile has at least n entries (the processes set
// up their signal handling before they record themselves).
func waitRecorded(t *testing.T, path string, n int) {
	t.Helper()
	waitPidLines(t, path, n, 10*time.Second)
}

// Guardian, core issue: if the supervisor is SIGKILLed, the guardian contains
// everything within the TERM grace plus 500 ms. TERM-immune hold and worker
// trees make the full grace count. The bound has 500 ms of slack for a loaded
// CI machine; the measured time is logged.
func TestGuardianContainsWithinGraceAfterSupervisorKill(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"cgroup", "process-group"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				flags:  []string{"--containment", backend},
				worker: "--ignore-signals --grandchild-setsid --tree 10",
				hold:   []string{"--ignore-signals", "--descendant-marker", "{dir}/hold-child-ran", "--descendant-after", "1h", "emit:leader,term=3,budget=60000"},
			})
			r.waitEvent("leader", 5*time.Second)
			waitRecorded(t, r.dir+"/pids", 12)
			waitRecorded(t, r.dir+"/hold.pids", 2)
			killed := time.Now()
			require.NoError(t, r.cmd.Process.Kill())
			requireAllDeadWithin(t, r.dir, time.Second+500*time.Millisecond+500*time.Millisecond)
			t.Logf("%s: everything dead %v after SIGKILL of the supervisor (grace 1s)", backend, time.Since(killed).Round(time.Millisecond))
			require.Equal(t, 137, r.wait(bound))
		})
	}
}
