package supervisor

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// forgedLeader and forgedRenewed are well-formed hold lines a hostile process
// would write into a hold's stdout (sequence far ahead, long budget, fresh
// clocks do not matter: they must never be read at all).
const (
	forgedLeader  = `{"schema_version":1,"sequence":900,"event":"leader","kind":"election","name":"room","candidate_id":"agent","term":99,"authority_remaining_ms":300000}`
	forgedRenewed = `{"schema_version":1,"sequence":901,"event":"renewed","kind":"election","name":"room","candidate_id":"agent","term":7,"authority_remaining_ms":300000}`
)

// reopenHoldStdout is the attack of issue 10 item 2: stop the hold, open its
// stdout through /proc and write a forged line. It returns the open's error;
// the hold stays stopped.
func reopenHoldStdout(t *testing.T, hold recorded, line string) error {
	t.Helper()
	require.NoError(t, proctest.Signal(hold.record(), syscall.SIGSTOP))
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", hold.pid), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
	return nil
}

// A waiting candidate's hold is stopped and a forged leader written into its
// stdout: the hold's stdout is a socket, which /proc cannot open (ENXIO, even
// for root), so nothing reaches the supervisor and its worker never starts.
func TestForgedLeaderIntoWaitingHoldRefused(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting"}})
	r.waitEvent("waiting", bound)
	hold := waitPidLines(t, r.dir+"/hold.pids", 1, bound)[0]
	require.ErrorIs(t, reopenHoldStdout(t, hold, forgedLeader), syscall.ENXIO)
	require.NoError(t, proctest.Signal(hold.record(), syscall.SIGCONT))
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	require.Equal(t, []string{"waiting"}, r.events())
	requireNeverRan(t, r)
}

// A leader's hold is stopped (so its renewals stop, as when the authority
// takes the lease away) and a forged renewed written into its stdout: the
// open fails, and the stopped hold is covered by the freshness deadline: the
// worker is contained when the 3 s budget runs out, 20, no renewed printed.
func TestForgedRenewalIntoStoppedHoldRefused(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		worker: "--ignore-signals --child",
		hold:   []string{"emit:leader,term=7,budget=3000", "forever"},
	})
	r.waitEvent("leader", bound)
	hold := waitPidLines(t, r.dir+"/hold.pids", 1, bound)[0]
	require.ErrorIs(t, reopenHoldStdout(t, hold, forgedRenewed), syscall.ENXIO)
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Less(t, time.Since(r.began), 10*time.Second, "the deadline of a stopped hold was not enforced")
	require.Contains(t, r.stderr(), "the authority deadline passed without a fresh renewal")
	require.Equal(t, []string{"leader"}, r.events())
	require.Empty(t, aliveRecorded(pidsIn(r.dir+"/pids")))
}
