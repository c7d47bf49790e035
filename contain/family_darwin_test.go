package contain

// These run on macOS only (CI cross-compiles and vets them; run them on a Mac
// with go test ./contain/ -run 'Darwin|Doctor|Setsid'). The Unix-shared logic
// they build on is tested on Linux in family_linux_test.go.

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// setsidCommand runs its arguments in a new session in the same process:
// macOS has no setsid(1), so the test binary does it (TestSetsidHelper).
func setsidCommand() string {
	return "env OCTOSTORE_SETSID_HELPER=1 " + os.Args[0] + " -test.run=^TestSetsidHelper$ --"
}

// TestSetsidHelper is the setsid(1) of setsidCommand when run by it; as a test
// it only checks that it was not started by mistake.
func TestSetsidHelper(t *testing.T) {
	if os.Getenv("OCTOSTORE_SETSID_HELPER") != "1" {
		require.Empty(t, os.Getenv("SETSID"), "a tree's shell ran the test binary without the helper switch")
		return
	}
	i := slices.Index(os.Args, "--")
	if i < 0 || i+1 >= len(os.Args) {
		os.Exit(64)
	}
	if _, err := unix.Setsid(); err != nil {
		os.Exit(70)
	}
	path := os.Args[i+1]
	if path[0] != '/' {
		path = "/bin/" + path
	}
	_ = syscall.Exec(path, os.Args[i+1:], os.Environ())
	os.Exit(70)
}

// stop kills the root and everything the tree recorded and waits until all of
// it is gone (orphans are reaped by launchd here).
func (tr *tree) stop(t *testing.T) {
	_ = tr.cmd.Process.Kill()
	_ = tr.cmd.Wait()
	r := platform.NewProcReader()
	deadline := time.Now().Add(10 * time.Second)
	for _, rec := range tr.recs {
		for {
			p, err := r.Stat(rec.Pid)
			if errors.Is(err, platform.ErrNoProcess) || (err == nil && (p.StartTicks != rec.Start || p.Dead())) {
				break
			}
			_ = r.Signal(platform.Proc{Pid: rec.Pid, StartTicks: rec.Start}, syscall.SIGKILL)
			require.True(t, time.Now().Before(deadline), "%v survived the test", rec)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (f *family) knows(pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.known[pid]
	return ok
}

func TestDarwinTrackedFamilyTeardown(t *testing.T) {
	tr := startTree(t, "trap '' TERM INT HUP\n"+orphanTree+"exec sleep 3600", "grouped", "daemon", "parent", "plain")
	var mu sync.Mutex
	gone := make(chan struct{})
	t.Cleanup(func() { close(gone) })
	f := trackFamily(tr.root.Pid, &mu, gone) // exec.Cmd has not waited: the root is unreaped
	require.NotNil(t, f)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the daemon in its own session", func() bool { d := tr.stat(t, "daemon"); return d.Sid == d.Pid })
	waitFor("tracking to record the daemon", func() bool { return f.knows(tr.pid["daemon"]) })

	r := platform.NewProcReader()
	require.NoError(t, r.Signal(tr.stat(t, "parent"), syscall.SIGKILL))
	waitFor("the daemon orphaned to launchd", func() bool { return tr.stat(t, "daemon").PPid == 1 })
	below, err := r.Descendants(tr.root.Pid, nil)
	require.NoError(t, err)
	require.NotContains(t, pids(below), tr.pid["daemon"])

	s := newSweeper()
	s.family = f
	rep := s.terminate(tr.root.Pid, nil, time.Now().Add(300*time.Millisecond), 5*time.Second, io.Discard)
	require.True(t, rep.ProvenEmpty, "survivors: %+v", rep.Survivors)
	require.Equal(t, parentChainLimit, rep.Limit)
	for _, rec := range tr.recs {
		if rec.Role == "parent" {
			continue
		}
		p, err := r.Stat(rec.Pid)
		require.True(t, err != nil || p.StartTicks != rec.Start || p.Dead(), "%v survived", rec)
	}
	root, err := r.Stat(tr.root.Pid)
	require.NoError(t, err)
	require.False(t, root.Dead(), "the root (a shim) must survive its group's teardown")
}

func TestDarwinBareParentWalkProvesNothing(t *testing.T) {
	rep := newSweeper().terminate(os.Getpid(), nil, time.Now(), 100*time.Millisecond, io.Discard)
	require.False(t, rep.ProvenEmpty, "a walk of parent links cannot see what went to launchd")
	require.Equal(t, parentChainLimit, rep.Limit)
}

func TestDoctorStatesTheLimit(t *testing.T) {
	d := Doctor(nil)
	require.Equal(t, BackendProcessGroup, d.Backend)
	i := slices.IndexFunc(d.Facts, func(f Fact) bool { return f.Name == "containment limit" })
	require.GreaterOrEqual(t, i, 0)
	require.False(t, d.Facts[i].OK)
	require.Equal(t, parentChainLimit, d.Facts[i].Detail)
	for _, name := range []string{"process table (kern.proc)", "kqueue EVFILT_PROC", "process groups and sessions"} {
		j := slices.IndexFunc(d.Facts, func(f Fact) bool { return f.Name == name })
		require.GreaterOrEqual(t, j, 0, name)
		require.True(t, d.Facts[j].OK, "%s: %s", name, d.Facts[j].Detail)
	}
}
