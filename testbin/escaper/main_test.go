//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// mustStat reads a recorded process, which must still be the one recorded.
func mustStat(t *testing.T, e proctest.Record) platform.Proc {
	t.Helper()
	st, err := proctest.Stat(e.Pid)
	require.NoError(t, err, "process %d (%s) has no /proc entry", e.Pid, e.Role)
	require.Equal(t, e.Start, st.StartTicks, "process %d (%s) was recycled", e.Pid, e.Role)
	return st
}

// The daemon of a double fork + setsid must end up in its own session,
// reparented away from the worker (to us, the subreaper), still immune to
// TERM, and must write its marker. Configuration comes from ESCAPER_ARGS
// because the supervisor starts workers without arguments.
func TestGrandchildSetsidDaemonViaEnv(t *testing.T) {
	dir := t.TempDir()
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "marker")
	rr := escaper.Start(t, pf, []string{"ESCAPER_ARGS=--pidfile " + pf + " --grandchild-setsid --ignore-signals --marker " + marker + " --marker-after 100ms"})
	by := waitRoles(t, pf, map[string]int{"worker": 1, "daemonizer": 1, "daemon": 1})

	worker, daemon := by["worker"][0], by["daemon"][0]
	assert.Equal(t, rr.Cmd.Process.Pid, worker.Pid)
	ws, ds := mustStat(t, worker), mustStat(t, daemon)
	assert.NotEqual(t, ws.Sid, ds.Sid, "daemon must be in another session")
	assert.Equal(t, daemon.Pid, ds.Sid, "daemon leads its session")
	assert.Equal(t, daemon.Pid, ds.Pgid, "daemon leads its group")

	// The intermediate exits (and is reaped by the worker); the daemon is
	// then reparented to the nearest subreaper: this test process.
	proctest.WaitFor(t, 5*time.Second, "daemonizer exit", func() bool { return !by["daemonizer"][0].Alive() })
	proctest.WaitFor(t, 5*time.Second, "daemon reparented", func() bool {
		st, err := proctest.Stat(daemon.Pid)
		return err == nil && st.PPid == os.Getpid()
	})

	proctest.WaitFor(t, 5*time.Second, "markers", func() bool {
		_, e1 := os.Stat(marker)
		_, e2 := os.Stat(marker + ".daemon")
		return e1 == nil && e2 == nil
	})

	require.NoError(t, proctest.Signal(daemon, unix.SIGTERM))
	require.NoError(t, proctest.Signal(worker, unix.SIGTERM))
	// Time must pass: an ignored signal leaves no trace to wait for, so a
	// wrongly handled one is given a while to kill.
	time.Sleep(200 * time.Millisecond)
	assert.True(t, daemon.Alive(), "daemon must ignore SIGTERM")
	assert.False(t, rr.Exited(), "worker must ignore SIGTERM")
}

// Each spawn mode puts its processes where the flag says.
func TestSpawnModes(t *testing.T) {
	self := os.Getpid()
	cases := []struct {
		name  string
		args  []string
		roles map[string]int
		check func(t *testing.T, w platform.Proc, by map[string][]proctest.Record)
	}{
		{"child", []string{"--child"}, map[string]int{"child": 1}, func(t *testing.T, w platform.Proc, by map[string][]proctest.Record) {
			c := mustStat(t, by["child"][0])
			assert.Equal(t, w.Pid, c.PPid)
			assert.Equal(t, w.Pgid, c.Pgid)
			assert.Equal(t, w.Sid, c.Sid)
		}},
		{"double-fork", []string{"--double-fork"}, map[string]int{"forker": 1, "grandchild": 1}, func(t *testing.T, w platform.Proc, by map[string][]proctest.Record) {
			g := by["grandchild"][0]
			proctest.WaitFor(t, 5*time.Second, "forker exit", func() bool { return !by["forker"][0].Alive() })
			proctest.WaitFor(t, 5*time.Second, "grandchild reparented", func() bool {
				st, err := proctest.Stat(g.Pid)
				return err == nil && st.PPid == self
			})
			gs := mustStat(t, g)
			assert.Equal(t, w.Pgid, gs.Pgid, "no setsid: group kept")
			assert.Equal(t, w.Sid, gs.Sid)
		}},
		{"child-setpgid", []string{"--child-setpgid"}, map[string]int{"pgchild": 1}, func(t *testing.T, w platform.Proc, by map[string][]proctest.Record) {
			c := mustStat(t, by["pgchild"][0])
			assert.Equal(t, c.Pid, c.Pgid)
			assert.Equal(t, w.Sid, c.Sid)
		}},
		{"join-group", []string{"--join-group"}, map[string]int{"host": 1}, func(t *testing.T, w platform.Proc, by map[string][]proctest.Record) {
			h := mustStat(t, by["host"][0])
			assert.Equal(t, h.Pid, h.Pgid)
			proctest.WaitFor(t, 5*time.Second, "worker joins host group", func() bool {
				st, err := proctest.Stat(w.Pid)
				return err == nil && st.Pgid == h.Pid
			})
		}},
		{"setpgid", []string{"--setpgid"}, nil, func(t *testing.T, w platform.Proc, _ map[string][]proctest.Record) {
			assert.Equal(t, w.Pid, w.Pgid)
			assert.NotEqual(t, w.Pid, w.Sid)
		}},
		{"setsid", []string{"--setsid"}, nil, func(t *testing.T, w platform.Proc, _ map[string][]proctest.Record) {
			assert.Equal(t, w.Pid, w.Sid)
			assert.Equal(t, w.Pid, w.Pgid)
		}},
		{"nohup", []string{"--nohup"}, map[string]int{"nohup": 1}, func(t *testing.T, w platform.Proc, by map[string][]proctest.Record) {
			n := by["nohup"][0]
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Pid))
			require.NoError(t, err)
			var ign uint64
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
					ign, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
					require.NoError(t, err)
				}
			}
			assert.NotZero(t, ign&(1<<(unix.SIGHUP-1)), "SIGHUP must be ignored")
			require.NoError(t, proctest.Signal(n, unix.SIGHUP))
			time.Sleep(100 * time.Millisecond) // time for a wrongly handled SIGHUP to kill
			assert.True(t, n.Alive())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pf := filepath.Join(t.TempDir(), "pids")
			escaper.Start(t, pf, nil, append([]string{"--pidfile", pf}, c.args...)...)
			want := map[string]int{"worker": 1}
			for r, n := range c.roles {
				want[r] = n
			}
			by := waitRoles(t, pf, want)
			c.check(t, mustStat(t, by["worker"][0]), by)
		})
	}
}

// --tree 100 builds exactly 100 processes below the worker, and the worker
// only goes on (marker) once all of them have started.
func TestTree100(t *testing.T) {
	dir := t.TempDir()
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "marker")
	rr := escaper.Start(t, pf, nil, "--pidfile", pf, "--tree", "100", "--marker", marker)
	proctest.WaitFor(t, 60*time.Second, "worker marker after the tree", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	var tree []proctest.Record
	for _, e := range records(t, pf) {
		if e.Role == "tree" {
			tree = append(tree, e)
		}
	}
	require.Len(t, tree, 100)
	below, err := platform.NewProcReader().Descendants(os.Getpid(), nil)
	require.NoError(t, err)
	all := map[int]platform.Proc{}
	for _, p := range below {
		all[p.Pid] = p
	}
	wpid := rr.Cmd.Process.Pid
	for _, e := range tree {
		st, ok := all[e.Pid]
		require.True(t, ok, "tree node %d missing", e.Pid)
		require.Equal(t, e.Start, st.StartTicks)
		require.NotEqual(t, byte('Z'), st.State)
		// Walk up to the worker: every node must be below it.
		p, hops := st.PPid, 0
		for p != wpid && hops < 10 {
			p, hops = all[p].PPid, hops+1
		}
		require.Equal(t, wpid, p, "tree node %d is not below the worker", e.Pid)
	}
	time.Sleep(100 * time.Millisecond) // time for a 102nd process to show up, which must not
	assert.Len(t, records(t, pf), 101, "no more than worker + 100")
}

// --storm N forks N processes without the worker waiting.
func TestStorm(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "pids")
	escaper.Start(t, pf, nil, "--pidfile", pf, "--storm", "40")
	waitRoles(t, pf, map[string]int{"storm": 40})
	time.Sleep(200 * time.Millisecond) // time for a 41st storm process to show up, which must not
	n := 0
	for _, e := range records(t, pf) {
		if e.Role == "storm" {
			n++
			assert.True(t, e.Alive())
		}
	}
	assert.Equal(t, 40, n)
}

// --zombies N leaves N exited, unreaped children of a living worker.
func TestZombies(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "pids")
	rr := escaper.Start(t, pf, nil, "--pidfile", pf, "--zombies", "5")
	by := waitRoles(t, pf, map[string]int{"zombie": 5})
	for _, z := range by["zombie"] {
		proctest.WaitFor(t, 5*time.Second, "zombie state", func() bool {
			st, err := proctest.Stat(z.Pid)
			return err == nil && st.State == 'Z' && st.StartTicks == z.Start
		})
		st, _ := proctest.Stat(z.Pid)
		assert.Equal(t, rr.Cmd.Process.Pid, st.PPid)
	}
	time.Sleep(100 * time.Millisecond) // time for a worker that wrongly exits to do so
	assert.False(t, rr.Exited(), "worker keeps running")
	// Cleanup kills the worker; the zombies are reparented to us and reaped.
}

// --env-out, --touch-ready, --log and --exit with their delays.
func TestEnvReadyLogExit(t *testing.T) {
	dir := t.TempDir()
	logf, envf, ready := filepath.Join(dir, "log"), filepath.Join(dir, "env"), filepath.Join(dir, "ready")
	began := time.Now()
	rr := escaper.Start(t, "", []string{"OCTOSTORE_FENCING_TERM=17", "OCTOSTORE_SUPERVISOR_READY_FILE=" + ready},
		"--log", logf, "--env-out", envf, "--touch-ready", "--ready-after", "100ms", "--exit", "7", "--exit-after", "400ms")
	proctest.WaitFor(t, 5*time.Second, "ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	assert.False(t, rr.Exited(), "ready comes before the exit")
	assert.Equal(t, 7, rr.ExitCode(t, 5*time.Second))
	assert.GreaterOrEqual(t, time.Since(began), 400*time.Millisecond)

	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("started %d term 17\n", rr.Cmd.Process.Pid), string(b))
	env, err := os.ReadFile(envf)
	require.NoError(t, err)
	lines := strings.Split(string(env), "\n")
	assert.Contains(t, lines, "OCTOSTORE_FENCING_TERM=17")
	assert.Contains(t, lines, "OCTOSTORE_SUPERVISOR_READY_FILE="+ready)
}

// A cooperative worker logs "stopped" and exits 0 on TERM.
func TestTermExits(t *testing.T) {
	dir := t.TempDir()
	logf, pf := filepath.Join(dir, "log"), filepath.Join(dir, "pids")
	rr := escaper.Start(t, pf, []string{"OCTOSTORE_FENCING_TERM=3"}, "--term-exits", "--log", logf, "--pidfile", pf)
	pid := rr.Cmd.Process.Pid
	// The pidfile line is written after the TERM handler is installed.
	waitRoles(t, pf, map[string]int{"worker": 1})
	require.NoError(t, rr.Cmd.Process.Signal(unix.SIGTERM))
	assert.Equal(t, 0, rr.ExitCode(t, 5*time.Second))
	b, _ := os.ReadFile(logf)
	assert.Equal(t, fmt.Sprintf("started %d term 3\nstopped %d\n", pid, pid), string(b))
}

// --ignore-signals holds in the worker and in its child; markers come from
// both after the delay.
func TestIgnoreSignalsAndMarkers(t *testing.T) {
	dir := t.TempDir()
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "m")
	rr := escaper.Start(t, pf, nil, "--pidfile", pf, "--ignore-signals", "--child", "--marker", marker, "--marker-after", "300ms")
	by := waitRoles(t, pf, map[string]int{"worker": 1, "child": 1})
	w, c := by["worker"][0], by["child"][0]
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		require.NoError(t, proctest.Signal(w, sig))
		require.NoError(t, proctest.Signal(c, sig))
	}
	proctest.WaitFor(t, 5*time.Second, "markers", func() bool {
		_, e1 := os.Stat(marker)
		_, e2 := os.Stat(marker + ".child")
		return e1 == nil && e2 == nil
	})
	assert.False(t, rr.Exited())
	assert.True(t, c.Alive())
}

func TestStdoutForge(t *testing.T) {
	rr := escaper.Start(t, "", nil, "--stdout-forge", "--exit", "0")
	l1, _ := rr.NextLine(t, 5*time.Second)
	l2, _ := rr.NextLine(t, 5*time.Second)
	assert.Equal(t, `{"schema_version":1,"source":"octostore-supervisor","sequence":999,"event":"released","kind":"election","name":"room","candidate_id":"agent","term":7}`, l1)
	assert.Equal(t, "worker says hello", l2)
	assert.Equal(t, 0, rr.ExitCode(t, 5*time.Second))
	assert.Equal(t, "worker stderr hello\n", rr.Stderr.String())
}

// --tamper reports what a same-UID worker can reach, without changing it.
func TestTamper(t *testing.T) {
	state := t.TempDir()
	ready := filepath.Join(state, "worker-application-ready")
	authority := filepath.Join(state, "authority-state")
	require.NoError(t, os.WriteFile(authority, []byte("1 2 3\n"), 0o644))
	fifo := filepath.Join(state, "events")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	out := filepath.Join(t.TempDir(), "tamper")

	rr := escaper.Start(t, "", []string{"OCTOSTORE_SUPERVISOR_READY_FILE=" + ready}, "--tamper", out, "--exit", "0")
	require.Equal(t, 0, rr.ExitCode(t, 10*time.Second), rr.Stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	self := os.Getpid()
	assert.Contains(t, lines, fmt.Sprintf("ok list %s [authority-state events]", state))
	assert.Contains(t, lines, "ok write "+authority)
	assert.Contains(t, lines, fmt.Sprintf("ok kill-0 %d", self))
	assertPrefix := func(p string) {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, p) {
				return
			}
		}
		t.Errorf("no line starting with %q in:\n%s", p, b)
	}
	assertPrefix("fail write " + fifo + ": ") // no reader: ENXIO, not a hang
	assertPrefix(fmt.Sprintf("ok create %s/escaper-tamper.", state))
	assertPrefix(fmt.Sprintf("ok read /proc/%d/environ (", self))
	assertPrefix(fmt.Sprintf("ok list /proc/%d/fd [", self))
	assertPrefix("ok scan /tmp (")
	got, _ := os.ReadFile(authority)
	assert.Equal(t, "1 2 3\n", string(got), "tamper must not change content")
}

// Bad flags end with 64 and one line; the hidden child mode is reachable
// only as the first real argument.
func TestBadFlags(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"unknown flag", nil, []string{"--bogus"}},
		{"positional", nil, []string{"foo"}},
		{"tree without pidfile", nil, []string{"--tree", "5"}},
		{"marker-after alone", nil, []string{"--marker-after", "1s"}},
		{"exit out of range", nil, []string{"--exit", "300"}},
		{"term-exits and ignore", nil, []string{"--term-exits", "--ignore-signals"}},
		{"setsid and setpgid", nil, []string{"--setsid", "--setpgid"}},
		{"negative storm", nil, []string{"--storm", "-1"}},
		{"child mode from env", []string{"ESCAPER_ARGS=--escaper-child=tree"}, nil},
		{"child mode not first", nil, []string{"--child", "--escaper-child=child"}},
		{"unknown child role", nil, []string{"--escaper-child=nosuch"}},
		{"bad env flag", []string{"ESCAPER_ARGS=--exit x"}, nil},
		{"migrate-cgroup without log", nil, []string{"--migrate-cgroup"}},
		{"migrate-log alone", nil, []string{"--migrate-log", "x"}},
		{"negative setuid", nil, []string{"--setuid", "-1"}},
		{"setuid out of range", nil, []string{"--setuid", "4294967295"}},
		{"negative light-tree", nil, []string{"--light-tree", "-1"}},
		{"leader-exit without a heartbeat path", nil, []string{"--leader-exit="}},
		{"migrant without log", nil, []string{"--escaper-child=migrant"}},
		{"setuid child without uid", nil, []string{"--escaper-child=setuid"}},
		{"windows detached", nil, []string{"--detached"}},
		{"windows orphan", nil, []string{"--orphan"}},
		{"windows new-group", nil, []string{"--new-group"}},
		{"windows breakaway", nil, []string{"--breakaway"}},
		{"windows ignore-console", nil, []string{"--ignore-console"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rr := escaper.Start(t, "", c.env, c.args...)
			assert.Equal(t, 64, rr.ExitCode(t, 5*time.Second))
			msg := rr.Stderr.String()
			assert.True(t, strings.HasPrefix(msg, "escaper: ") && strings.Count(msg, "\n") == 1, "stderr %q", msg)
		})
	}
}

// statusField returns the value of a "Name:" line of /proc/PID/status.
func statusField(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s line in /proc/%d/status", name, pid)
	return ""
}

// gone reports whether the recorded process has left the process table, that
// is, it is dead and has been reaped (a recycled pid counts as gone).
func gone(e proctest.Record) bool {
	st, err := proctest.Stat(e.Pid)
	return errors.Is(err, platform.ErrNoProcess) || (err == nil && st.StartTicks != e.Start)
}

// --migrate-cgroup: the migrant logs its attempt before it records itself,
// and when it says ok it is in the cgroup it names.
func TestMigrateCgroup(t *testing.T) {
	dir := t.TempDir()
	pf, mlog := filepath.Join(dir, "pids"), filepath.Join(dir, "migrate")
	rr := escaper.Start(t, pf, nil, "--pidfile", pf, "--migrate-cgroup", "--migrate-log", mlog)
	by := waitRoles(t, pf, map[string]int{"worker": 1, "migrant": 1})
	m := by["migrant"][0]
	ms := mustStat(t, m)
	assert.Equal(t, rr.Cmd.Process.Pid, ms.PPid)

	// No waiting: the line is written before the pidfile line.
	b, err := os.ReadFile(mlog)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 1, "migrate log %q", b)
	t.Logf("migrant %d: %s", m.Pid, lines[0])
	f := strings.Fields(lines[0])
	require.GreaterOrEqual(t, len(f), 3, "line %q", lines[0])
	require.Equal(t, "migrate", f[0])
	switch f[1] {
	case "ok":
		require.Len(t, f, 3, "line %q", lines[0])
		require.Equal(t, "cgroup.procs", filepath.Base(f[2]))
		procs, err := os.ReadFile(f[2])
		require.NoError(t, err)
		assert.Contains(t, strings.Fields(string(procs)), strconv.Itoa(m.Pid), "migrant not in %s", f[2])
	case "fail":
		assert.True(t, f[2] == "-:" || strings.HasSuffix(f[2], "/cgroup.procs:"), "line %q", lines[0])
	default:
		t.Fatalf("line %q is neither ok nor fail", lines[0])
	}
	assert.True(t, m.Alive())
}

// --setuid 65534 as root: the child has dropped every identity it had,
// recorded itself anyway, and the worker has nothing to complain about.
func TestSetuid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change identity")
	}
	dir := t.TempDir()
	pf, logf := filepath.Join(dir, "pids"), filepath.Join(dir, "log")
	rr := escaper.Start(t, pf, nil, "--pidfile", pf, "--log", logf, "--setuid", "65534")
	by := waitRoles(t, pf, map[string]int{"worker": 1, "setuid": 1})
	c := by["setuid"][0]
	cs := mustStat(t, c)
	assert.Equal(t, rr.Cmd.Process.Pid, cs.PPid)
	assert.Equal(t, "65534 65534 65534 65534", statusField(t, c.Pid, "Uid"))
	assert.Equal(t, "65534 65534 65534 65534", statusField(t, c.Pid, "Gid"))
	assert.Equal(t, "", statusField(t, c.Pid, "Groups"))
	assert.Equal(t, "0 0 0 0", statusField(t, rr.Cmd.Process.Pid, "Uid"), "the worker keeps its identity")
	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("started %d term \n", rr.Cmd.Process.Pid), string(b))
	assert.Empty(t, rr.Stderr.String())
}

// A worker that may not change identity: the child fails with 70, the worker
// logs why and goes on (its marker comes after the spawns).
func TestSetuidFails(t *testing.T) {
	setpriv := needSetpriv(t)
	dir := sharedDir(t)
	pf, logf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "log"), filepath.Join(dir, "m")

	rr := proctest.Binary(setpriv).Start(t, pf, nil, "--reuid", "65534", "--regid", "65534", "--clear-groups",
		string(escaper), "--pidfile", pf, "--log", logf, "--setuid", "0", "--marker", marker)
	proctest.WaitFor(t, 10*time.Second, "worker marker", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	pid := rr.Cmd.Process.Pid // setpriv execs the worker
	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	want := "setuid failed: setgroups([]): operation not permitted"
	assert.Equal(t, fmt.Sprintf("started %d term \n%s\n", pid, want), string(b))
	assert.Equal(t, "escaper: "+want+"\n", rr.Stderr.String())
	recs := records(t, pf)
	require.Len(t, recs, 1, "only the worker is recorded")
	assert.Equal(t, pid, recs[0].Pid)
	assert.Equal(t, "worker", recs[0].Role)
	assert.Equal(t, "65534 65534 65534 65534", statusField(t, pid, "Uid"))
	assert.False(t, rr.Exited(), "the worker goes on")
}

// needSetpriv skips the test unless it can start a worker as nobody (uid and
// gid 65534) with setpriv(1).
func needSetpriv(t *testing.T) string {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv(1) to start the worker as another user")
	}
	return setpriv
}

// sharedDir is a world-writable directory for the files of an unprivileged
// worker, which cannot reach t.TempDir (its parents are private).
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "escaper-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	return dir
}

// --light-tree 200: 200 plain sleeps, children of the worker, recorded by it
// before it goes on. With --ignore-signals they shrug off TERM/INT/HUP and
// need SIGKILL; without, TERM ends them. Either way the worker reaps them.
func TestLightTree(t *testing.T) {
	const n = 200
	for _, ignore := range []bool{true, false} {
		t.Run(fmt.Sprintf("ignore-signals=%v", ignore), func(t *testing.T) {
			dir := t.TempDir()
			pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "m")
			args := []string{"--pidfile", pf, "--light-tree", strconv.Itoa(n), "--marker", marker}
			if ignore {
				args = append(args, "--ignore-signals")
			}
			rr := escaper.Start(t, pf, nil, args...)
			wpid := rr.Cmd.Process.Pid
			proctest.WaitFor(t, 30*time.Second, "worker marker after the light tree", func() bool {
				_, err := os.Stat(marker)
				return err == nil
			})
			var light []proctest.Record
			for _, e := range records(t, pf) {
				if e.Role == "light" {
					light = append(light, e)
				}
			}
			require.Len(t, light, n)
			seen := map[int]bool{}
			const termBits = 1<<(unix.SIGHUP-1) | 1<<(unix.SIGINT-1) | 1<<(unix.SIGTERM-1)
			for _, e := range light {
				require.False(t, seen[e.Pid], "pid %d recorded twice", e.Pid)
				seen[e.Pid] = true
				st := mustStat(t, e)
				require.Equal(t, "sleep", st.Comm)
				require.Equal(t, "sleep 3600", platform.Cmdline(e.Pid))
				require.Equal(t, wpid, st.PPid)
				ign, err := strconv.ParseUint(statusField(t, e.Pid, "SigIgn"), 16, 64)
				require.NoError(t, err)
				if ignore {
					require.Equal(t, uint64(termBits), ign&termBits, "pid %d SigIgn %x", e.Pid, ign)
				} else {
					require.Zero(t, ign&(1<<(unix.SIGTERM-1)), "pid %d SigIgn %x", e.Pid, ign)
				}
			}

			for _, e := range light {
				require.NoError(t, proctest.Signal(e, unix.SIGTERM))
				if ignore {
					require.NoError(t, proctest.Signal(e, unix.SIGINT))
					require.NoError(t, proctest.Signal(e, unix.SIGHUP))
				}
			}
			if ignore {
				time.Sleep(200 * time.Millisecond) // time for wrongly handled signals to kill
				require.Len(t, proctest.Alive(light), n, "every light process must ignore TERM/INT/HUP")
				require.NoError(t, proctest.Kill(light...))
			}
			// Dead and reaped by the worker, which is still running.
			proctest.WaitFor(t, 10*time.Second, "light processes reaped", func() bool {
				for _, e := range light {
					if !gone(e) {
						return false
					}
				}
				return true
			})
			assert.False(t, rr.Exited(), "the worker keeps running")
		})
	}
}

// Where --migrate-cgroup writes: found from /proc/self/mountinfo, never
// assumed, for the layouts a host may have.
func TestCgroupTargets(t *testing.T) {
	const (
		hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
			"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
			"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
		pure   = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
		nested = "50 40 0:26 /a/b /mnt/sub rw - cgroup2 cgroup2 rw\n" + pure
		spaced = "50 40 0:26 / /mnt/my\\040cg rw master:1 - cgroup2 none rw\n"
		v1only = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	)
	cases := []struct {
		name, cgroup, mountinfo, top, parent string
	}{
		{"hybrid at the top", "1:pids:/\n0::/\n", hybrid, "/sys/fs/cgroup/unified/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs"},
		{"hybrid nested", "0::/user.slice/s.scope\n", hybrid, "/sys/fs/cgroup/unified/cgroup.procs", "/sys/fs/cgroup/unified/user.slice/cgroup.procs"},
		{"pure v2", "0::/a/b/c\n", pure, "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/a/b/cgroup.procs"},
		{"prefers the top mount", "0::/a/b/c\n", nested, "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/a/b/cgroup.procs"},
		{"subtree mount only", "0::/a/b/c/d\n", "50 40 0:26 /a/b /mnt/sub rw - cgroup2 cgroup2 rw\n", "/mnt/sub/cgroup.procs", "/mnt/sub/c/cgroup.procs"},
		{"cgroup outside the mount", "0::/x\n", "50 40 0:26 /a /mnt/sub rw - cgroup2 cgroup2 rw\n", "/mnt/sub/cgroup.procs", "/mnt/sub/cgroup.procs"},
		{"escaped mount point", "0::/w\n", spaced, "/mnt/my cg/cgroup.procs", "/mnt/my cg/cgroup.procs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top, parent, err := cgroupTargets(c.cgroup, c.mountinfo)
			require.NoError(t, err)
			assert.Equal(t, c.top, top)
			assert.Equal(t, c.parent, parent)
		})
	}
	_, _, err := cgroupTargets("1:pids:/\n", hybrid)
	assert.ErrorContains(t, err, `no cgroup v2 ("0::") line`)
	_, _, err = cgroupTargets("0::/\n", v1only)
	assert.ErrorContains(t, err, "no cgroup2 mount")
}

// The fallback of --migrate-cgroup, with a delegated subtree as systemd gives
// a user: the worker runs as nobody in DELEG/a/b, which nobody owns from DELEG
// down. The top of the hierarchy refuses the migrant, its parent DELEG/a
// takes it.
func TestMigrateCgroupFallback(t *testing.T) {
	setpriv := needSetpriv(t)
	self, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	mi, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	top, _, err := cgroupTargets(string(self), string(mi))
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	mnt := filepath.Dir(top)
	deleg := filepath.Join(mnt, fmt.Sprintf("escaper-test-%d", os.Getpid()))
	leaf := filepath.Join(deleg, "a", "b")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Skipf("cannot create cgroups under %s: %v", mnt, err)
	}
	// Registered before the worker starts, so it runs after the worker's
	// cleanup has killed everything: only empty cgroups can be removed.
	t.Cleanup(func() {
		for _, d := range []string{leaf, filepath.Dir(leaf), deleg} {
			proctest.WaitFor(t, 5*time.Second, "rmdir "+d, func() bool {
				err := unix.Rmdir(d)
				return err == nil || errors.Is(err, unix.ENOENT)
			})
		}
	})
	for _, d := range []string{deleg, filepath.Dir(leaf), leaf} {
		for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
			require.NoError(t, os.Chown(filepath.Join(d, f), 65534, 65534))
		}
	}

	dir := sharedDir(t)
	pf, mlog := filepath.Join(dir, "pids"), filepath.Join(dir, "migrate")
	// The shell moves itself into the leaf and execs, through setpriv, the
	// worker: one pid all along.
	script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec %s --reuid 65534 --regid 65534 --clear-groups %s --pidfile %s --migrate-cgroup --migrate-log %s`,
		leaf, setpriv, escaper, pf, mlog)
	rr := proctest.Binary("/bin/sh").Start(t, pf, nil, "-c", script)
	by := waitRoles(t, pf, map[string]int{"worker": 1, "migrant": 1})
	require.Equal(t, rr.Cmd.Process.Pid, by["worker"][0].Pid)
	m := by["migrant"][0]
	mustStat(t, m)

	b, err := os.ReadFile(mlog)
	require.NoError(t, err)
	want := fmt.Sprintf("migrate ok %s/cgroup.procs\n", filepath.Dir(leaf))
	assert.Equal(t, want, string(b))
	rel := strings.TrimPrefix(filepath.Dir(leaf), mnt)
	assert.Contains(t, strings.Split(readString(t, fmt.Sprintf("/proc/%d/cgroup", m.Pid)), "\n"), "0::"+rel)
	assert.Contains(t, strings.Split(readString(t, fmt.Sprintf("/proc/%d/cgroup", rr.Cmd.Process.Pid)), "\n"), "0::"+strings.TrimPrefix(leaf, mnt))
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// --leader-exit: the main thread leaves with SYS_EXIT while another thread
// runs on. /proc then shows the leader in state Z with more than one thread,
// platform.Proc judges the process alive (not a zombie), the heartbeat keeps
// changing, and a SIGKILL through its pid ends the whole group.
func TestLeaderExit(t *testing.T) {
	dir := t.TempDir()
	pf, hb := filepath.Join(dir, "pids"), filepath.Join(dir, "heartbeat")
	rr := escaper.Start(t, pf, nil, "--pidfile", pf, "--ignore-signals", "--leader-exit", hb)
	worker := waitRoles(t, pf, map[string]int{"worker": 1})["worker"][0]
	proctest.WaitFor(t, 10*time.Second, "first heartbeat", func() bool { return fileExists(hb) })
	first := readString(t, hb)
	f := strings.Fields(first)
	require.Len(t, f, 3, first)
	require.Equal(t, "Z", f[1], "the heartbeat runs only once the leader has gone")
	threads, err := strconv.Atoi(f[2])
	require.NoError(t, err)
	require.Greater(t, threads, 1)

	st := mustStat(t, worker)
	require.Equal(t, byte('Z'), st.State)
	require.Greater(t, st.Threads, 1)
	require.False(t, st.Dead(), "a leader whose threads run on is alive")
	require.True(t, worker.Alive())
	proctest.WaitFor(t, 10*time.Second, "a later heartbeat", func() bool { return readString(t, hb) != first })

	require.NoError(t, proctest.Kill(worker))
	require.Equal(t, -1, rr.ExitCode(t, 10*time.Second), "SIGKILL ends the whole thread group")
	require.True(t, gone(worker))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
