package supervisor

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/internal/helperimage"
	"github.com/octostore-supervisor/supervisor/platform"
)

// The suite's supervisor carries the lean helper image (as `make build`
// makes it), so every run of the suite (as root, without a test hook) hands
// itself over to that image once its command line is parsed, and starts its
// guardian and shims from it. This says so, and that the embedded hold of the
// local authority runs from the hold image bundled below it (the lean image
// has no hold in it; the hold image has no etcd client: an etcd hold runs from
// the supervisor's own binary, which the etcd fault matrix checks) as the root
// of its own group, the guardian's child with no shim above it, and that
// neither the supervisor nor any helper keeps the supervisor's binary open once
// the hold runs. ps still shows what was asked for.
func TestHelpersStartFromTheLeanImage(t *testing.T) {
	t.Parallel()
	require.Zero(t, os.Geteuid(), "root's supervisors start helpers from the lean image; run the black-box tests as root (as CI does)")
	sup, err := filepath.EvalSymlinks(bins.sup)
	require.NoError(t, err)

	t.Run("embedded hold", func(t *testing.T) {
		t.Parallel()
		xdg := privateDir(t)
		room := createRoom(t, "local", "XDG_RUNTIME_DIR="+xdg)
		r := startLocal(t, sc{env: []string{"XDG_RUNTIME_DIR=" + xdg}}, "election", room, "agent", "--server", "local")
		r.waitEvent("leader", bound)
		supervisor := r.cmd.Process.Pid
		guardian := guardianOf(t, supervisor)
		hold, err := holdOf(supervisor)
		require.NoError(t, err)
		workerShim := 0
		for _, k := range children(guardian) {
			if k.Pid != hold.Pid {
				require.Zero(t, workerShim, "the guardian starts the hold and the worker's shim, nothing else")
				workerShim = k.Pid
			}
		}
		require.Equal(t, guardian, parentOf(t, hold.Pid), "the embedded hold roots its own group: no shim above it")
		require.Contains(t, platform.Cmdline(hold.Pid), contain.HoldRootArg+" election hold --json", "ps shows the hold's own arguments")
		require.Empty(t, children(hold.Pid))
		for pid, what := range map[int]string{supervisor: "supervisor", guardian: "guardian", workerShim: "worker's shim"} {
			requireLean(t, pid, what)
		}
		for pid, what := range map[int]string{supervisor: "supervisor", guardian: "guardian", workerShim: "worker's shim", hold.Pid: "embedded hold"} {
			requireNoThreadInSocketRead(t, pid, what)
		}
		for pid, what := range map[int]string{guardian: "guardian", workerShim: "worker's shim", hold.Pid: "embedded hold"} {
			requireOneP(t, pid, what)
		}
		require.Contains(t, platform.Cmdline(supervisor), room+" agent", "ps shows the supervisor's own words")
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", supervisor))
		require.NoError(t, err)
		require.Equal(t, "octostore-super\n", string(comm), "the supervisor keeps its name across the handover")
		_, holdImage := bundledImages(t)
		require.Equal(t, holdImage, exeOf(t, hold.Pid), "the local authority's embedded hold runs the bundled hold image")
		b, err := os.ReadFile(holdImage)
		require.NoError(t, err)
		require.NotContains(t, string(b), "go.etcd.io/etcd/client", "the hold image links no etcd client")
		for _, pid := range []int{supervisor, guardian, hold.Pid} {
			require.NotContains(t, openFiles(t, pid), sup, "%d keeps no descriptor of the supervisor's binary once the hold runs", pid)
		}

		require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 143, r.wait(bound), r.stderr())
		require.Equal(t, []string{"leader", "released"}, r.events())
	})
	t.Run("hold command", func(t *testing.T) {
		t.Parallel()
		r := start(t, sc{hold: []string{"emit:leader,term=4,budget=60000", "waitfile:{dir}/go", "emit:lost,term=4"}})
		r.waitEvent("leader", bound)
		supervisor := r.cmd.Process.Pid
		guardian := guardianOf(t, supervisor)
		holdShim, workerShim := shimsOf(t, guardian)
		for pid, what := range map[int]string{supervisor: "supervisor", guardian: "guardian", holdShim: "hold's shim", workerShim: "worker's shim"} {
			requireLean(t, pid, what)
			requireNoThreadInSocketRead(t, pid, what)
		}
		for pid, what := range map[int]string{guardian: "guardian", holdShim: "hold's shim", workerShim: "worker's shim"} {
			requireOneP(t, pid, what)
		}
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "go"), nil, 0o644))
		require.Equal(t, 20, r.wait(bound), r.stderr())
		require.Equal(t, []string{"leader", "lost"}, r.events())
	})
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := startCLI(t, dir, 0, "run", "--json", "--", bins.esc, "--pidfile", filepath.Join(dir, "pids"), "--term-exits")
		recs := waitPidLines(t, filepath.Join(dir, "pids"), 1, bound)
		supervisor := r.cmd.Process.Pid
		guardian := guardianOf(t, supervisor)
		for pid, what := range map[int]string{supervisor: "supervisor", guardian: "guardian", shimOf(t, recs): "shim"} {
			requireLean(t, pid, what)
		}
		require.Contains(t, platform.Cmdline(supervisor), "run --json --", "ps shows the supervisor's own words")
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
		r.wait(bound)
		require.Equal(t, true, containmentIn(t, r.line("run"))["proven_empty"], r.stderr())
		require.Empty(t, aliveRecorded(recs))
	})
}

// shimsOf tells the guardian's two shims apart by what they started.
func shimsOf(t *testing.T, guardian int) (hold, worker int) {
	t.Helper()
	for _, shim := range children(guardian) {
		require.Contains(t, platform.Cmdline(shim.Pid), contain.ShimArg)
		kids := children(shim.Pid)
		require.Len(t, kids, 1, "shim %d", shim.Pid)
		if c := platform.Cmdline(kids[0].Pid); strings.Contains(c, "__octostore-hold") || strings.Contains(c, "fakehold") {
			hold = shim.Pid
		} else {
			worker = shim.Pid
		}
	}
	require.NotZero(t, hold, "the hold's shim")
	require.NotZero(t, worker, "the worker's shim")
	return hold, worker
}

func parentOf(t *testing.T, pid int) int {
	t.Helper()
	p, err := platform.NewProcReader().Stat(pid)
	require.NoError(t, err)
	return p.PPid
}

// requireNoThreadInSocketRead says that no thread of pid sleeps in a read of
// a unix socket: our control sockets and the event channel are pollable, so
// their readers wait in the runtime's poller (epoll) and hold no OS thread.
// A blocking one pins a thread in read(2) for the whole run, one the thread
// reserve then no longer has for teardown (the guardian had three). Every
// thread's wait channel is read; at least one must name a kernel function,
// or this host hides them and the check would prove nothing.
func requireNoThreadInSocketRead(t *testing.T, pid int, what string) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	require.NoError(t, err)
	var named int
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name()))
		require.NoError(t, err)
		wchan := string(b)
		if wchan != "" && wchan != "0" {
			named++
		}
		require.NotEqual(t, "unix_stream_read_generic", wchan, "a thread of the %s (%d) waits in a socket read", what, pid)
	}
	require.Positive(t, named, "the wait channels of the %s's threads are readable", what)
}

// The supervisor continued in the lean image starts with one P, as its helpers
// do, and what it sets for itself reaches neither the hold nor the worker: both
// get the caller's environment as it was.
func TestLeanSupervisorKeepsItsOwnPs(t *testing.T) {
	t.Parallel()
	r := start(t, sc{
		env:     []string{"GOMAXPROCS=7"},
		holdPre: "env > {dir}/hold.env",
		worker:  "--term-exits --env-out {dir}/env",
		hold:    []string{"emit:leader,term=4,budget=60000", "waitfile:{dir}/env", "waitfile:{dir}/go", "emit:released,term=4"},
	})
	r.waitEvent("leader", bound)
	waitFile(t, filepath.Join(r.dir, "env"), bound)
	supervisor := r.cmd.Process.Pid
	requireLean(t, supervisor, "supervisor")
	requireOneP(t, supervisor, "supervisor")
	for _, f := range []string{"env", "hold.env"} {
		b, err := os.ReadFile(filepath.Join(r.dir, f))
		require.NoError(t, err)
		var set []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "GOMAXPROCS=") {
				set = append(set, l)
			}
		}
		require.Equal(t, []string{"GOMAXPROCS=7"}, set, "%s: the caller's setting, alone", f)
	}
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "go"), nil, 0o644))
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "released"}, r.events())
}

// requireOneP: a process of ours starts with one P. Its environment says so
// before the runtime reads it, and the first GOMAXPROCS there is the one Go
// reads (the caller's, for the embedded hold and the lean supervisor, comes
// after ours).
func requireOneP(t *testing.T, pid int, what string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	require.NoError(t, err)
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "GOMAXPROCS="); ok {
			require.Equal(t, "1", v, "the %s (%d) starts with one P", what, pid)
			return
		}
	}
	require.Fail(t, "no GOMAXPROCS in the environment", "the %s (%d)", what, pid)
}

func requireLean(t *testing.T, pid int, what string) {
	t.Helper()
	lean, _ := bundledImages(t)
	require.Equal(t, lean, exeOf(t, pid), "the %s (%d) runs the lean helper image", what, pid)
}

// bundledImages are the copies in contain.HelperCacheDir of the images the
// suite's supervisor carries: the helpers' and the embedded hold's.
func bundledImages(t *testing.T) (lean, hold string) {
	t.Helper()
	f, err := os.Open(bins.sup)
	require.NoError(t, err)
	defer f.Close()
	helper, ok, err := helperimage.FindFile(f)
	require.NoError(t, err)
	require.True(t, ok, "the suite's supervisor carries its helper image")
	holdImg, ok, err := helperimage.FindHold(f)
	require.NoError(t, err)
	require.True(t, ok, "the suite's supervisor carries the hold image")
	return filepath.Join(contain.HelperCacheDir, hex.EncodeToString(helper.Sum[:])),
		filepath.Join(contain.HelperCacheDir, hex.EncodeToString(holdImg.Sum[:]))
}

func exeOf(t *testing.T, pid int) string {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	require.NoError(t, err)
	return exe
}

// openFiles lists what pid's descriptors name.
func openFiles(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, target)
		}
	}
	return out
}
