package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// leakLanes is how many of the 200 runs go at once: one per core of CI's
// two, so the test takes half the time and still loads no core twice.
const leakLanes = 2

// 200 supervised runs, leakLanes at a time, leave no process, pipe,
// temporary file or descriptor behind: not in the test process, not in
// TMPDIR, not as a child.
func TestLeak200Runs(t *testing.T) {
	defaultPassOnly(t)
	if testing.Short() {
		t.Skip("200 runs take about 15 s; run without -short")
	}
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	lanes := make([]string, leakLanes)
	for i := range lanes {
		lanes[i] = filepath.Join(dir, fmt.Sprint("lane", i))
		require.NoError(t, os.Mkdir(lanes[i], 0o700))
		// The private state directory keeps the name's interlock between runs
		// (and a survivor record after a failed containment); it is the one
		// thing a run may leave, and what it holds is checked below. Each
		// lane has its own, so the lanes do not wait for each other.
		require.NoError(t, os.Mkdir(filepath.Join(lanes[i], "state"), 0o700))
		worker := filepath.Join(lanes[i], "worker.sh")
		require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\nexec '"+bins.esc+"' --grandchild-setsid --pidfile '"+lanes[i]+"/pids'\n"), 0o755))
	}

	fdsBefore := openFDs(t)
	errs := make([]error, leakLanes)
	var wg sync.WaitGroup
	for i, lane := range lanes {
		wg.Go(func() { errs[i] = leakRuns(lane, tmp, 200/leakLanes) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "temporary files left in TMPDIR")
	for _, lane := range lanes {
		kept, err := filepath.Glob(filepath.Join(lane, "state", "octostore", "supervised", "*"))
		require.NoError(t, err)
		require.Len(t, kept, 1, "the state directory should hold the name's interlock only: %v", kept)
		require.True(t, strings.HasSuffix(kept[0], ".active"), "the state directory should hold the name's interlock only: %v", kept)
	}
	require.Empty(t, liveDescendants(os.Getpid()), "processes left")
	require.Equal(t, fdsBefore, openFDs(t), "descriptors (pipes, sockets) left open in the test process")
}

// leakRuns runs n supervisors in a row in lane, each of which must end with
// 20 (the hold reports the loss), and stops at the first that does not. It
// runs on its own goroutine, so it returns what went wrong instead of
// failing the test.
func leakRuns(lane, tmp string, n int) error {
	for i := 0; i < n; i++ {
		cmd := exec.Command(bins.sup, "election", "room", "agent", filepath.Join(lane, "worker.sh"), "--",
			bins.hold, "emit:leader,term=1,budget=20000", "waitfile:"+lane+"/pids", "sleep:20ms", "emit:lost,term=1")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_RUNTIME_DIR="+filepath.Join(lane, "state"))
		out, err := cmd.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 20 {
			var stderr []byte
			if exit != nil {
				stderr = exit.Stderr
			}
			return fmt.Errorf("%s run %d: %v, want exit 20; stdout:\n%s\nstderr:\n%s", filepath.Base(lane), i, err, out, stderr)
		}
		if err := os.Remove(filepath.Join(lane, "pids")); err != nil {
			return err
		}
	}
	return nil
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}
