package supervisor

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// Issue 10 item 3: a guardian stopped by SIGSTOP (by the worker, say) can
// enforce nothing. The supervisor is told by the kernel (its child stopped)
// and contains everything itself at once, long before the 30 s deadline:
// 20 with the synthesized uncertain line, the TERM-immune worker tree gone.
func TestStoppedGuardianNoticedAndContained(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --child", hold: []string{"emit:leader,term=7,budget=30000", "forever"}})
	r.waitEvent("leader", bound)
	waitRecorded(t, r.dir+"/pids", 2)
	g := guardianOf(t, r.cmd.Process.Pid)
	stopped := time.Now()
	require.NoError(t, syscall.Kill(g, syscall.SIGSTOP))
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Less(t, time.Since(stopped), 8*time.Second, "the stopped guardian was not noticed")
	require.Contains(t, r.stderr(), "the guardian was stopped")
	require.Equal(t, []string{"leader", "uncertain"}, r.events())
	require.Equal(t, "guardian_lost", r.line("uncertain")["reason_code"])
	require.Equal(t, true, r.line("uncertain")["containment"].(map[string]any)["proven_empty"])
	require.Empty(t, aliveRecorded(pidsIn(r.dir+"/pids")))
}

// Issue 11 item 12: SIGTERM to the supervisor while its guardian is stopped is
// acted on at once through the path that remains, not when the guardian
// resumes (never, here). The supervisor is held still while guardian stop
// and signal are delivered, so both are waiting for it when it resumes.
func TestSignalWithStoppedGuardianActedOnPromptly(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--child", hold: []string{"emit:leader,term=7,budget=30000", "forever"}})
	r.waitEvent("leader", bound)
	waitRecorded(t, r.dir+"/pids", 2)
	sup := r.cmd.Process.Pid
	g := guardianOf(t, sup)
	require.NoError(t, syscall.Kill(sup, syscall.SIGSTOP))
	waitStopped(t, sup, bound)
	require.NoError(t, syscall.Kill(g, syscall.SIGSTOP))
	waitStopped(t, g, bound)
	require.NoError(t, syscall.Kill(sup, syscall.SIGTERM))
	resumed := time.Now()
	require.NoError(t, syscall.Kill(sup, syscall.SIGCONT))
	code := r.wait(bound)
	require.Less(t, time.Since(resumed), 5*time.Second, "the supervisor waited for its stopped guardian")
	require.Contains(t, []int{20, 143}, code, r.stderr())
	require.Empty(t, aliveRecorded(pidsIn(r.dir+"/pids")))
	evs := r.events()
	require.Equal(t, "leader", evs[0])
	require.Contains(t, r.stderr(), "using main-process fallback")
}

// Issue 11 item 7: when the supervisor is SIGKILLed, the guardian contains the
// run and says so - what it killed and proved, in how long - on the stderr it
// shares with the supervisor, the only account a user gets.
func TestGuardianSaysWhatItDidAfterSupervisorDied(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --child", hold: []string{"emit:leader,term=7,budget=30000", "forever"}})
	r.waitEvent("leader", bound)
	recs := waitPidLines(t, r.dir+"/pids", 2, bound)
	require.NoError(t, r.cmd.Process.Kill())
	require.Equal(t, 137, r.wait(bound))
	requireDeadBy(t, recs, time.Now().Add(bound))
	// The stderr pipe closes when the guardian, its last holder, exits.
	require.Regexp(t, `(?m)^octostore-supervisor guardian: the supervisor died; its worker and hold groups were killed and proven empty \(`+wantBackend(sc{})+`, [1-9]\d* processes killed, \d+ ms\)$`, r.stderr())
}

// The worker's pre-start helper, stopped before the gate (a SIGSTOP from
// anything of its user's), cannot hold the guardian at the start: the helper
// names the worker within 5 s or the start fails in doubt, and the
// worker's group goes with the stopped helper in it. The worker never runs.
func TestStoppedPreStartHelperFailsTheStart(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"waitfile:{dir}/go", "emit:leader,term=7,budget=30000", "forever"}})
	helper := waitPrestartHelper(t, guardianOf(t, r.cmd.Process.Pid))
	require.NoError(t, syscall.Kill(helper.Pid, syscall.SIGSTOP))
	waitStopped(t, helper.Pid, bound)
	require.NoError(t, os.WriteFile(r.dir+"/go", nil, 0o644))
	code := r.wait(bound)
	require.Contains(t, r.stderr(), "the worker's helper did not say it started the worker within 5s")
	require.Equal(t, 20, code, r.stderr())
	require.Empty(t, r.events(), "nothing was printed: the leader line comes only after the start")
	requireNeverRan(t, r)
	require.False(t, helper.Alive(), "the stopped helper outlived its run")
}

// Once the worker runs, its pre-start helper is gone: the worker is the
// shim's child, and nothing of ours is left in its group but the shim.
func TestPreStartHelperLeavesTheWorkerToItsShim(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=7,budget=30000", "forever"}})
	r.waitEvent("leader", bound)
	worker := waitPidLines(t, r.dir+"/pids", 1, bound)[0]
	g := guardianOf(t, r.cmd.Process.Pid)
	proctest.WaitFor(t, bound, "the pre-start helper to leave", func() bool {
		for _, p := range liveDescendants(g) {
			if strings.Contains(platform.Cmdline(p.Pid), contain.PrestartArg) {
				return false
			}
		}
		return true
	})
	wp, err := platform.NewProcReader().Stat(worker.pid)
	require.NoError(t, err)
	require.Contains(t, platform.Cmdline(wp.PPid), contain.ShimArg, "the worker's parent")
	require.NoError(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM))
	require.NotEqual(t, -1, r.wait(bound))
}

// waitPrestartHelper is the pre-start helper below guardian g.
func waitPrestartHelper(t *testing.T, g int) proctest.Record {
	t.Helper()
	var rec proctest.Record
	proctest.WaitFor(t, bound, "the worker's pre-start helper", func() bool {
		for _, p := range liveDescendants(g) {
			if strings.Contains(platform.Cmdline(p.Pid), contain.PrestartArg) {
				rec = proctest.Record{Pid: p.Pid, Start: p.StartTicks, Role: "pre-start helper"}
			}
		}
		return rec.Pid != 0
	})
	return rec
}
