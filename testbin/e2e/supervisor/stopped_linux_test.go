package supervisor

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
