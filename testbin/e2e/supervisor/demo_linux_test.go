package supervisor

import (
	"os/exec"
	"path/filepath"
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
	text := runDemo(t, filepath.Join(moduleRoot, "demo.sh"), 2*time.Minute)
	for _, want := range []string{
		`"event":"leader"`, `"event":"waiting"`, "waits (its worker has not started: right)",
		"containment came first", "found (in /proc) agent-", "exited 143", "done: nothing the demo started is left",
	} {
		require.Contains(t, text, want)
	}
}

// make demo-cluster, likewise, on the pinned etcd 3.6 (or the build
// OCTOSTORE_TEST_ETCD_SERVER names): killing the etcd leader member costs the
// holds at most a retried renewal (one only when it falls into the 1-2 s
// without a leader) and nothing else; the killed hold's lease lapses
// after its TTL, long after its worker's tree was proven gone; the script
// stops its members by pid and checks them gone.
func TestDemoClusterScript(t *testing.T) {
	defaultPassOnly(t)
	text := runDemo(t, filepath.Join(moduleRoot, "demo-cluster.sh"), 3*time.Minute, "OCTOSTORE_DEMO_ETCD="+etcdServer(t).Path)
	for _, want := range []string{
		"m0 m1 m2", `"event":"leader"`, `"event":"waiting"`, "waits (its worker has not started: right)",
		"the cluster's leader", "renewed through the new etcd leader", "no terminal line from either agent",
		"its 20 s TTL runs out", "containment came first", "found (in /proc) agent-", "exited 143",
		"done: nothing the demo started is left",
	} {
		require.Contains(t, text, want)
	}
}

// runDemo runs a demo script with this suite's binaries and returns its
// output; it must end 0 within limit and never report a survivor.
func runDemo(t *testing.T, script string, limit time.Duration, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", script)
	cmd.Env = append(localEnv(env...), "OCTOSTORE_DEMO_BIN="+bins.dir)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish within %v:\n%s", script, limit, out)
	}
	require.NoError(t, err, "%s", out)
	text := string(out)
	require.False(t, strings.Contains(text, "STILL RUNNING"), text)
	return text
}
