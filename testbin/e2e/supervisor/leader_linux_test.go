package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// leaderExitInBackground is a shell command that starts the escaper with
// --leader-exit in the background and returns once its leader thread is gone
// and a second thread beats: the repro of issue 10 (`./zl & sleep .5`), with a
// wait for the condition instead of the sleep.
func leaderExitInBackground(dir string) string {
	hb := filepath.Join(dir, "heartbeat")
	return fmt.Sprintf(`'%s' --pidfile '%s' --ignore-signals --leader-exit '%s' & until [ -e '%s' ]; do sleep 0.01; done`,
		bins.esc, filepath.Join(dir, "pids"), hb, hb)
}

// A process whose main thread has exited while another thread runs on, left
// behind by `run`'s command or by a supervised worker that exits 0: it is
// killed under both backends before the run ends (the summary, or released),
// and proven_empty is reported only once it is really gone.
func TestLeaderExitEscapeeKilled(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		name  string
		event string // the line whose containment object reports the teardown
		args  func(dir, backend string) []string
	}{
		{"run", "run", func(dir, backend string) []string {
			return []string{"run", "--json", "--containment", backend, "--", "/bin/sh", "-c", leaderExitInBackground(dir)}
		}},
		{"supervised worker exits 0", "released", func(dir, backend string) []string {
			worker := filepath.Join(dir, "worker.sh")
			require.NoError(t, os.WriteFile(worker, []byte("#!/bin/sh\n"+leaderExitInBackground(dir)+"\n"), 0o755))
			return []string{"election", "--containment", backend, "room", "agent", worker, "--",
				bins.hold, "--pidfile", filepath.Join(dir, "hold.pids"), "emit:leader,term=1,budget=20000"}
		}},
	} {
		for _, backend := range []string{"cgroup", "process-group"} {
			t.Run(c.name+"/"+backend, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				r := startCLI(t, dir, 0, c.args(dir, backend)...)
				require.Equal(t, 0, r.wait(bound), r.stderr())
				line := r.line(c.event)
				if c.event == "released" {
					require.Equal(t, []string{"leader", "released"}, r.events())
					require.EqualValues(t, 0, line["worker_exit_code"])
				}
				cont, ok := line["containment"].(map[string]any)
				require.True(t, ok, "no containment object: %s", r.out.String())
				require.Equal(t, backend, cont["backend"])
				require.Equal(t, true, cont["proven_empty"], r.stderr())
				require.GreaterOrEqual(t, num(cont, "killed"), float64(1))
				requireLeaderExitEnded(t, dir)
			})
		}
	}
}

// `sweep` (and so the sweep every supervisor runs at start) kills such an
// escapee in an abandoned run, which cgroup.kill alone leaves running.
func TestSweepKillsLeaderExitEscapee(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	parent := newCgroupParent(t)
	abandoned := filepath.Join(parent, "run-999999.1-999998.1")
	leaf := mkLeaf(t, abandoned, "worker")
	mkLeaf(t, abandoned, "hold")
	markRun(t, abandoned)
	dir := t.TempDir()
	// In the leaf before it runs an instruction of its own, as a worker is.
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(leaf, "cgroup.procs"),
		bins.esc, "--pidfile", filepath.Join(dir, "pids"), "--ignore-signals", "--leader-exit", filepath.Join(dir, "heartbeat"))
	require.NoError(t, cmd.Start())
	var waitErr error
	ended := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(ended) }()
	t.Cleanup(func() {
		select {
		case <-ended:
		default:
			_ = cmd.Process.Kill() // pidfd-backed, and our unreaped child
			<-ended
		}
	})
	waitFile(t, filepath.Join(dir, "heartbeat"), bound)

	r := startCLI(t, t.TempDir(), 0, "sweep", "--cgroup-parent", parent)
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Equal(t, []string{abandoned + "  processes 1  proven empty true  removed true"}, r.out.Lines())
	select {
	case <-ended:
		require.ErrorContains(t, waitErr, "signal: killed")
	case <-time.After(bound):
		t.Fatal("the escapee was never killed")
	}
	require.NoDirExists(t, abandoned)
	requireLeaderExitEnded(t, dir)
}

// A shim whose supervisor and guardian are both killed contains its group
// alone, with the guardian's own cgroup kill: cgroup.kill, then a SIGKILL
// through a pidfd for what it leaves (a leader that exited while a thread
// runs on) at the first look for stragglers. The shim used to write
// cgroup.kill and wait out the proof bound (5 s) before anything else.
func TestShimAloneKillsLeaderExitEscapee(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	r := start(t, sc{
		flags:  []string{"--containment", "cgroup"},
		worker: "--ignore-signals --leader-exit {dir}/heartbeat",
		hold:   []string{"emit:leader,term=4,budget=20000"},
	})
	r.waitEvent("leader", bound)
	waitFile(t, filepath.Join(r.dir, "heartbeat"), bound)
	g := guardianOf(t, r.cmd.Process.Pid)
	require.NoError(t, r.cmd.Process.Kill())
	require.NoError(t, syscall.Kill(g, syscall.SIGKILL))
	// Generous against the first straggler look (20 ms), short of the 5 s;
	// before waiting for the supervisor's end, which the shim's output
	// descriptors hold back until the shim is done.
	requireAllDeadWithin(t, r.dir, 2*time.Second)
	require.Equal(t, 137, r.wait(bound))
	requireLeaderExitEnded(t, r.dir)
}

// The state the guardian's sweep root hangs on (platform.Proc.Exiting): a
// running process (this one) is neither exiting nor dead; a process whose
// leader thread has exited while another runs on is exiting but not dead.
func TestLeaderExitedProcessReadsExitingNotDead(t *testing.T) {
	t.Parallel()
	pr := platform.NewProcReader()
	p, err := pr.Stat(os.Getpid())
	require.NoError(t, err)
	require.False(t, p.Exiting(), "a process that runs is not exiting")
	require.False(t, p.Dead())

	dir := t.TempDir()
	cmd := exec.Command(bins.esc, "--ignore-signals", "--leader-exit", filepath.Join(dir, "heartbeat"))
	require.NoError(t, cmd.Start())
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // pidfd-backed, and our unreaped child
		<-ended
	})
	waitFile(t, filepath.Join(dir, "heartbeat"), bound)
	p, err = pr.Stat(cmd.Process.Pid)
	require.NoError(t, err)
	require.Equal(t, byte('Z'), p.State, "the leader has exited")
	require.Greater(t, p.Threads, 1, "a thread runs on")
	require.True(t, p.Exiting(), "its leader's task is past the start of its exit")
	require.False(t, p.Dead(), "but the process runs on")

	require.NoError(t, cmd.Process.Kill())
	require.ErrorContains(t, <-ended, "signal: killed")
	ended <- nil // for the cleanup
}
