package contain_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// make demo, run by the suite so CI proves it on a fresh machine: demo.sh with
// this suite's binaries must end 0, having shown the leader's worker tree proven
// gone before the second agent's worker started, and nothing left running (the
// script checks its daemons; TestMain checks every descendant).
func TestDemoScript(t *testing.T) {
	defaultPassOnly(t) // the demo runs with the backend auto picks
	cmd := exec.Command("bash", "../demo.sh")
	cmd.Env = append(localEnv(), "OCTOSTORE_DEMO_BIN="+bins.dir)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("demo.sh did not finish within 2 minutes:\n%s", out)
	}
	require.NoError(t, err, "%s", out)
	text := string(out)
	for _, want := range []string{
		`"event":"leader"`, `"event":"waiting"`, "waits (its worker has not started: right)",
		"containment came first", "found (in /proc) agent-", "exited 143", "done: nothing the demo started is left",
	} {
		require.Contains(t, text, want)
	}
	require.False(t, strings.Contains(text, "STILL RUNNING"), text)
}
