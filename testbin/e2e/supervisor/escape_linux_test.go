package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// lostAfterSetup is a hold that grants authority, lets the worker set up its
// escape, then reports the loss.
var lostAfterSetup = []string{"emit:leader,term=5,budget=20000", "waitfile:{dir}/log", "sleep:800ms", "emit:lost,term=5,reason=lease_not_current"}

// J1, J2, docs/protocol.md "Reference holes" and "Escape techniques" rows 1-7,
// 15, 17, 18, under both backends: every way a worker tree can try to outlive
// the worker group. Each must end with lost printed only after the whole tree
// is proven empty, and nothing recorded alive.
// The matrix is printed in the test log; docs/guarantees.md's table is taken from it.
func TestJEscapeMatrix(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	modes := []struct {
		name, worker string
		min          int    // processes the teardown must have found
		ready        string // the hold waits for this file instead of the worker's log
	}{
		{"J1 direct setsid", "--ignore-signals --setsid --child", 2, ""},
		{"direct setpgid", "--ignore-signals --setpgid --child", 2, ""},
		{"child in the same group", "--ignore-signals --child", 2, ""},
		{"4.2-1 grandchild double-fork + setsid (daemon)", "--ignore-signals --grandchild-setsid", 2, ""},
		{"double fork, reparented", "--ignore-signals --double-fork", 2, ""},
		{"4.3-5 child in a new process group", "--ignore-signals --child-setpgid", 2, ""},
		{"J2 worker joins another group", "--ignore-signals --join-group", 2, ""},
		{"nohup child", "--nohup", 2, ""},
		// The whole tree must be up when the loss comes, or fewer than 101
		// are there to kill: the worker's marker follows its setup.
		{"TERM/HUP/INT-immune 100-process tree", "--ignore-signals --tree 100 --marker {dir}/up", 101, "{dir}/up"},
		{"F5 fork storm (300)", "--ignore-signals --storm 300", 2, ""},
		{"2000 processes as fast as possible (killed mid-spawn)", "--ignore-signals --light-tree 2000", 2, ""},
		{"4.2-9 zombie factory", "--ignore-signals --zombies 50", 1, ""},
		{"4.3-17 child moves itself to another cgroup", "--ignore-signals --migrate-cgroup --migrate-log {dir}/migrate", 2, ""},
		{"4.3-18 setuid-style helper changes uid", "--ignore-signals --setuid 65534", 2, ""},
		{"Zl: leader thread exits, another runs on", "--ignore-signals --leader-exit {dir}/heartbeat", 1, ""},
	}
	type row struct {
		mode, backend     string
		contained, proven bool
		killed, ms        float64
	}
	rows := make(chan row, 2*len(modes))
	t.Cleanup(func() {
		close(rows)
		var all []row
		for r := range rows {
			all = append(all, r)
		}
		slices.SortFunc(all, func(a, b row) int { return strings.Compare(a.mode+a.backend, b.mode+b.backend) })
		var b strings.Builder
		fmt.Fprintf(&b, "\nescape matrix:\n%-46s %-13s %-9s %-6s %-7s %s\n", "mode", "backend", "contained", "proven", "killed", "teardown ms")
		for _, r := range all {
			fmt.Fprintf(&b, "%-46s %-13s %-9v %-6v %-7.0f %.0f\n", r.mode, r.backend, r.contained, r.proven, r.killed, r.ms)
		}
		t.Log(b.String())
	})
	for _, backend := range []string{"cgroup", "process-group"} {
		for _, m := range modes {
			t.Run(backend+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				hold, leaderExit := lostAfterSetup, strings.Contains(m.worker, "--leader-exit")
				switch {
				case leaderExit:
					hold = lostAfterLeaderExit
				case m.ready != "":
					hold = slices.Replace(slices.Clone(hold), 1, 2, "waitfile:"+m.ready)
				}
				r := start(t, sc{flags: []string{"--containment", backend}, worker: m.worker, hold: hold})
				code := r.wait(bound)
				alive := aliveRecorded(pidsIn(r.dir + "/pids"))
				var c map[string]any
				if code == 20 {
					c, _ = r.line("lost")["containment"].(map[string]any)
				}
				rows <- row{m.name, backend, code == 20 && len(alive) == 0, c != nil && c["proven_empty"] == true, num(c, "killed"), num(c, "duration_ms")}
				require.Equal(t, 20, code, r.stderr())
				require.Equal(t, []string{"leader", "lost"}, r.events())
				require.Equal(t, true, c["proven_empty"])
				require.Equal(t, backend, c["backend"])
				require.GreaterOrEqual(t, int(num(c, "killed")), m.min)
				require.Empty(t, alive)
				if leaderExit {
					requireLeaderExitEnded(t, r.dir)
				}
			})
		}
	}
}

// lostAfterLeaderExit is lostAfterSetup for --leader-exit: the loss comes once
// the worker's leader thread is gone and its heartbeat thread runs on.
var lostAfterLeaderExit = []string{"emit:leader,term=5,budget=20000", "waitfile:{dir}/heartbeat", "emit:lost,term=5,reason=lease_not_current"}

// requireLeaderExitEnded proves that the escaper run with --leader-exit
// {dir}/heartbeat had really escaped - its heartbeat shows the leader gone (Z)
// while threads ran on - and that the process is now gone from the process
// table: not a zombie with live threads, nor one waiting to be reaped. The
// oracle does not rely on platform.Proc.Dead, which is what is under test.
func requireLeaderExitEnded(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "heartbeat"))
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.Len(t, f, 3, "heartbeat %q", b)
	require.Equal(t, "Z", f[1], "heartbeat %q", b)
	require.NotEqual(t, "1", f[2], "heartbeat %q: the leader exited with no thread left", b)
	var recs []recorded
	for _, rec := range pidsIn(filepath.Join(dir, "pids")) {
		if rec.role == "worker" {
			recs = append(recs, rec)
		}
	}
	require.Len(t, recs, 1)
	w := recs[0]
	proctest.WaitFor(t, bound, fmt.Sprintf("the --leader-exit process %d gone", w.pid), func() bool {
		proctest.Reap(w.record()) // if it was orphaned to the test process
		p, err := platform.NewProcReader().Stat(w.pid)
		return err != nil || p.StartTicks != w.start
	})
}

func num(m map[string]any, k string) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return -1
}

// Done-when of the core issue: a worker whose grandchild double-forks and calls
// setsid is dead, reaped and proven gone before lost is printed.
func TestDaemonGoneAndReapedBeforeLost(t *testing.T) {
	t.Parallel()
	r := start(t, sc{pause: "terminal-contained", worker: "--ignore-signals --grandchild-setsid", hold: lostAfterSetup})
	waitStopped(t, r.cmd.Process.Pid, bound)
	var daemon *recorded
	for _, rec := range pidsIn(r.dir + "/pids") {
		if rec.role == "daemon" {
			daemon = &rec
		}
	}
	require.NotNil(t, daemon, "the worker's grandchild daemonized")
	_, err := platform.NewProcReader().Stat(daemon.pid)
	if err == nil {
		p, _ := platform.NewProcReader().Stat(daemon.pid)
		require.NotEqual(t, daemon.start, p.StartTicks, "the daemon still exists (alive or unreaped) at the terminal point")
	}
	require.Equal(t, []string{"leader"}, r.events(), "lost must wait for the proof")
	require.NoError(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGCONT))
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"leader", "lost"}, r.events())
}

// A worker that daemonizes a grandchild and exits 0 completes its task; the
// daemon is killed before the hold is asked to release.
func TestWorkerExitLeavesDaemonBehind(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --grandchild-setsid --exit 0 --exit-after 500ms", hold: []string{"emit:leader,term=5,budget=20000"}})
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "released"}, r.events())
	rel := r.line("released")
	require.EqualValues(t, 0, rel["worker_exit_code"])
	require.GreaterOrEqual(t, int(num(rel["containment"].(map[string]any), "killed")), 1, "the daemon was found and killed")
}

// docs/protocol.md "Reference holes" item 5: stdout carries supervisor lines
// only; a worker's forged supervisor line goes to stderr. --worker-output
// inherit restores the reference's mixing.
func TestHole5WorkerOutputSeparated(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--stdout-forge", hold: lostAfterSetup})
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"leader", "lost"}, r.events())
	require.NotContains(t, r.out.String(), `"sequence":999`)
	require.NotContains(t, r.out.String(), "worker says hello")
	require.Contains(t, r.stderr(), `"sequence":999`)
	require.Contains(t, r.stderr(), "worker says hello")
	require.Contains(t, r.stderr(), "worker stderr hello")

	r = start(t, sc{flags: []string{"--worker-output", "inherit"}, worker: "--stdout-forge", hold: lostAfterSetup})
	require.Equal(t, 20, r.wait(bound))
	require.Contains(t, r.out.String(), "worker says hello")
	require.NotContains(t, r.out.String(), "worker stderr hello")
}

// docs/protocol.md "Reference holes" item 13: the holder's secrets reach the
// hold, never the worker, and are never printed.
func TestHole13SecretsStayOutOfTheWorker(t *testing.T) {
	t.Parallel()
	const token = "tok-4f1c9e-SECRET"
	r := start(t, sc{
		env:     []string{"OCTOSTORE_TOKEN=" + token, "OCTOSTORE_TOKEN_FILE=/run/secret/" + token, "OCTOSTORE_ETCD_KEY=/run/secret/etcd.key"},
		holdPre: "env > {dir}/hold.env",
		worker:  "--env-out {dir}/env",
		hold:    lostAfterSetup,
	})
	require.Equal(t, 20, r.wait(bound))
	worker, err := os.ReadFile(filepath.Join(r.dir, "env"))
	require.NoError(t, err)
	hold, err := os.ReadFile(filepath.Join(r.dir, "hold.env"))
	require.NoError(t, err)
	require.NotContains(t, string(worker), token)
	require.NotContains(t, string(worker), "OCTOSTORE_TOKEN")
	require.NotContains(t, string(hold), "OCTOSTORE_TOKEN=", "the token file named wins, and the token stays out of every environment")
	require.Contains(t, string(hold), "OCTOSTORE_TOKEN_FILE=/run/secret/"+token)
	require.Contains(t, string(hold), "OCTOSTORE_ETCD_KEY=/run/secret/etcd.key")
	require.NotContains(t, string(worker), "OCTOSTORE_ETCD_KEY")
	require.Contains(t, string(worker), "OCTOSTORE_FENCING_TERM=5")
	require.Contains(t, string(worker), "OCTOSTORE_SUPERVISOR_READY_FILE=")
	require.NotContains(t, r.out.String()+r.stderr(), token)
}

// Issue 32, finding 2: an explicit hold (any hold command, ours or
// upstream's) gets the bearer token on its stdin (OCTOSTORE_TOKEN_FILE=-),
// never in its environment, which a worker of the same user read from
// /proc/<hold>/environ and then used to forge authority.
func TestExplicitHoldGetsTheTokenOnAPipe(t *testing.T) {
	t.Parallel()
	const token = "tok-9b3e71-SECRET"
	r := start(t, sc{
		env:     []string{"OCTOSTORE_TOKEN=" + token},
		holdPre: "env > {dir}/hold.env; cat > {dir}/hold.stdin",
		hold:    lostAfterSetup,
	})
	require.Equal(t, 20, r.wait(bound))
	hold, err := os.ReadFile(filepath.Join(r.dir, "hold.env"))
	require.NoError(t, err)
	require.NotContains(t, string(hold), token, "the token was in the hold's environment")
	require.Contains(t, string(hold), "OCTOSTORE_TOKEN_FILE=-\n")
	stdin, err := os.ReadFile(filepath.Join(r.dir, "hold.stdin"))
	require.NoError(t, err)
	require.Equal(t, token, string(stdin))
}

// docs/protocol.md "Reference holes" item 11: a hold whose release takes longer
// than the TERM grace is waited for (within --release-timeout), not killed
// after the grace.
func TestHole11SlowReleaseOutlastsGrace(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"--release-delay", "1500ms", "emit:leader,term=5,budget=20000"}})
	r.waitEvent("leader", 5*time.Second)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound))
	require.Equal(t, []string{"leader", "released"}, r.events())
}

// docs/protocol.md "Reference holes" items 2-4, 6, 11: nothing of the
// supervisor's is reachable from the worker. Run as an unprivileged user so
// that non-dumpable really bars /proc access (root's CAP_SYS_PTRACE would not
// be barred).
func TestHole2To6NoWorkerReachableState(t *testing.T) {
	t.Parallel()
	r := start(t, sc{uid: nobody, worker: "--tamper {dir}/tamper", hold: lostAfterSetup})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	b, err := os.ReadFile(filepath.Join(r.dir, "tamper"))
	require.NoError(t, err)
	t.Logf("tamper attempts:\n%s", b)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "ok list ") && strings.Contains(l, "octostore-ready-"):
			// The ready file's private directory: empty before readiness.
			require.True(t, strings.HasSuffix(l, "[]") || strings.HasSuffix(l, "[ready]"), l)
		case strings.HasPrefix(l, "ok create ") && strings.Contains(l, "octostore-ready-"):
			// Writable by design (the worker creates its ready file there); nothing reads it.
		case strings.HasPrefix(l, "ok kill-0 "):
			// Same-user processes can signal each other; a shim killed by the worker
			// is a breach the guardian contains (TestF6, TestH7).
		case strings.HasPrefix(l, "ok scan "):
			require.Contains(t, l, "(0 matches)", "no state directories")
		default:
			require.False(t, strings.HasPrefix(l, "ok "), "the worker reached supervisor state: %s", l)
		}
	}
}

// docs/protocol.md "Reference holes" item 7: PID exhaustion. The supervisor,
// its helpers and a fork-storming worker share one pids cgroup; teardown forks
// nothing, so it still proves the group empty.
func TestHole7PidExhaustion(t *testing.T) {
	t.Parallel()
	pidsDir := pidsCgroup(t)
	r := start(t, sc{
		cgroupProcs: filepath.Join(pidsDir, "cgroup.procs"),
		worker:      "--ignore-signals --storm 2000",
		hold:        []string{"emit:leader,term=5,budget=20000", "waitfile:{dir}/log", "sleep:1500ms", "emit:lost,term=5,reason=lease_not_current"},
	})
	require.Equal(t, 20, r.wait(bound), r.stderr())
	require.Equal(t, []string{"leader", "lost"}, r.events(), r.stderr())
	require.Equal(t, true, r.line("lost")["containment"].(map[string]any)["proven_empty"])
	current, err := os.ReadFile(filepath.Join(pidsDir, "pids.current"))
	require.NoError(t, err)
	require.Equal(t, "0", strings.TrimSpace(string(current)))
}

// pidsCgroup creates a pids-limited cgroup (v1 pids controller or v2 with the
// pids controller), found through /proc/self/mountinfo, removed at cleanup.
func pidsCgroup(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var dir string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		i := indexOf(f, "-")
		if i < 0 || i+3 >= len(f) {
			continue
		}
		fstype, opts, mnt := f[i+1], f[i+3], f[4]
		if fstype == "cgroup" && strings.Contains(","+opts+",", ",pids,") {
			dir = mnt
			break
		}
		if fstype == "cgroup2" {
			if ctrl, err := os.ReadFile(filepath.Join(mnt, "cgroup.subtree_control")); err == nil && strings.Contains(string(ctrl), "pids") {
				dir = mnt
			}
		}
	}
	require.NotEmpty(t, dir, "no pids cgroup controller on this host")
	cg := filepath.Join(dir, fmt.Sprintf("octostore-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cg, "pids.max"), []byte("120"), 0o644))
	t.Cleanup(func() {
		if !proctest.Until(2*time.Second, func() bool { return os.Remove(cg) == nil }) {
			t.Errorf("could not remove %s", cg)
		}
	})
	return cg
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// nobody is the unprivileged user the unprivileged subset runs as.
const nobody = 65534

// The core scenarios also hold for an unprivileged supervisor.
func TestUnprivilegedSubset(t *testing.T) {
	t.Parallel()
	t.Run("released exits 0", func(t *testing.T) {
		t.Parallel()
		r := start(t, sc{uid: nobody, hold: []string{"emit:waiting", "emit:leader,term=2,budget=5000", "waitfile:{dir}/log", "emit:released,term=2"}})
		require.Equal(t, 0, r.wait(bound), r.stderr())
		require.Equal(t, []string{"waiting", "leader", "released"}, r.events())
	})
	t.Run("daemon contained before lost", func(t *testing.T) {
		t.Parallel()
		r := start(t, sc{uid: nobody, worker: "--ignore-signals --grandchild-setsid --tree 20", hold: lostAfterSetup})
		require.Equal(t, 20, r.wait(bound), r.stderr())
		require.Equal(t, true, r.line("lost")["containment"].(map[string]any)["proven_empty"])
	})
	t.Run("silent hold expires", func(t *testing.T) {
		t.Parallel()
		r := start(t, sc{uid: nobody, worker: "--ignore-signals --child", hold: []string{"emit:leader,term=2,budget=2000"}})
		require.Equal(t, 20, r.wait(bound), r.stderr())
	})
	t.Run("SIGKILLed supervisor", func(t *testing.T) {
		t.Parallel()
		r := start(t, sc{uid: nobody, worker: "--ignore-signals --grandchild-setsid", hold: []string{"--ignore-signals", "emit:leader,term=2,budget=20000"}})
		r.waitEvent("leader", 5*time.Second)
		waitRecorded(t, r.dir+"/pids", 3)
		require.NoError(t, r.cmd.Process.Kill())
		r.wait(bound)
		requireAllDeadWithin(t, r.dir, 3*time.Second)
	})
}

// I1/I2 (and docs/protocol.md "Reference holes" item 12): a pid that names a
// different process than the one recorded is never signalled; unrelated
// processes outside the tree are untouched.
func TestIUnrelatedProcessNeverSignalled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sentinel := exec.Command(bins.esc, "--term-exits", "--log", filepath.Join(dir, "sentinel.log"), "--pidfile", filepath.Join(dir, "sentinel.pids"))
	require.NoError(t, sentinel.Start())
	t.Cleanup(func() { _ = sentinel.Process.Kill(); _ = sentinel.Wait() })
	waitRecorded(t, filepath.Join(dir, "sentinel.pids"), 1)

	// A recycled pid: right pid, wrong start time.
	pr := platform.NewProcReader()
	p, err := pr.Stat(sentinel.Process.Pid)
	require.NoError(t, err)
	stale := p
	stale.StartTicks--
	require.ErrorIs(t, pr.Signal(stale, syscall.SIGTERM), platform.ErrNoProcess)

	r := start(t, sc{kind: "lock", worker: "--ignore-signals --child-setpgid", hold: []string{"--ignore-signals", "emit:acquired,term=3,budget=20000"}, flags: []string{"--release-timeout", "500ms"}})
	r.waitEvent("acquired", 5*time.Second)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGHUP))
	require.Equal(t, 129, r.wait(bound))
	log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
	require.NotContains(t, string(log), "stopped", "the sentinel received a signal")
	q, err := pr.Stat(sentinel.Process.Pid)
	require.NoError(t, err)
	require.False(t, q.Dead())
}
