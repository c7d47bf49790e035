package contain_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// 200 supervised runs in a row leave no process, pipe, temporary file or
// descriptor behind: not in the test process, not in TMPDIR, not as a child.
func TestLeak200Runs(t *testing.T) {
	if testing.Short() {
		t.Skip("200 runs take about 15 s; run without -short")
	}
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	worker := filepath.Join(dir, "worker.sh")
	require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\nexec '"+bins.esc+"' --grandchild-setsid --pidfile '"+dir+"/pids'\n"), 0o755))

	// The private state directory keeps the name's interlock between runs
	// (and a survivor record after a failed containment); it is the one thing
	// a run may leave, and what it holds is checked below.
	state := filepath.Join(dir, "state")
	require.NoError(t, os.Mkdir(state, 0o700))
	fdsBefore := openFDs(t)
	for i := 0; i < 200; i++ {
		cmd := exec.Command(bins.sup, "election", "room", "agent", worker, "--",
			bins.hold, "emit:leader,term=1,budget=20000", "waitfile:"+dir+"/pids", "sleep:20ms", "emit:lost,term=1")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_RUNTIME_DIR="+state)
		out, err := cmd.Output()
		require.Error(t, err) // exit 20
		require.Equal(t, 20, cmd.ProcessState.ExitCode(), "run %d: %s", i, out)
		require.NoError(t, os.Remove(filepath.Join(dir, "pids")))
	}
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "temporary files left in TMPDIR")
	kept, err := filepath.Glob(filepath.Join(state, "octostore", "supervised", "*"))
	require.NoError(t, err)
	require.Len(t, kept, 1, "the state directory should hold the name's interlock only: %v", kept)
	require.True(t, strings.HasSuffix(kept[0], ".active"), "the state directory should hold the name's interlock only: %v", kept)
	require.Empty(t, liveDescendants(os.Getpid()), "processes left")
	require.Equal(t, fdsBefore, openFDs(t), "descriptors (pipes, sockets) left open in the test process")
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}
