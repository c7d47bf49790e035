//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// waitRoles waits until the pidfile holds at least n lines of each role and
// returns the entries by role.
func waitRoles(t *testing.T, pidfile string, want map[string]int) map[string][]pidEntry {
	t.Helper()
	var by map[string][]pidEntry
	waitFor(t, 30*time.Second, fmt.Sprintf("pidfile roles %v", want), func() bool {
		by = map[string][]pidEntry{}
		for _, e := range readPidfile(t, pidfile) {
			by[e.role] = append(by[e.role], e)
		}
		for r, n := range want {
			if len(by[r]) < n {
				return false
			}
		}
		return true
	})
	return by
}

func mustStat(t *testing.T, e pidEntry) procStat {
	t.Helper()
	st, ok := readStat(e.pid)
	require.True(t, ok, "process %d (%s) has no /proc entry", e.pid, e.role)
	require.Equal(t, e.start, st.start, "process %d (%s) was recycled", e.pid, e.role)
	return st
}

func gone(e pidEntry) bool { return !alive(e.pid, e.start) }

// The daemon of a double fork + setsid must end up in its own session,
// reparented away from the worker (to us, the subreaper), still immune to
// TERM, and must write its marker. Configuration comes from ESCAPER_ARGS
// because the supervisor starts workers without arguments.
func TestGrandchildSetsidDaemonViaEnv(t *testing.T) {
	dir := t.TempDir()
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "marker")
	rr := startProg(t, pf, []string{"ESCAPER_ARGS=--pidfile " + pf + " --grandchild-setsid --ignore-signals --marker " + marker + " --marker-after 100ms"})
	by := waitRoles(t, pf, map[string]int{"worker": 1, "daemonizer": 1, "daemon": 1})

	worker, daemon := by["worker"][0], by["daemon"][0]
	assert.Equal(t, rr.cmd.Process.Pid, worker.pid)
	ws, ds := mustStat(t, worker), mustStat(t, daemon)
	assert.NotEqual(t, ws.sid, ds.sid, "daemon must be in another session")
	assert.Equal(t, daemon.pid, ds.sid, "daemon leads its session")
	assert.Equal(t, daemon.pid, ds.pgrp, "daemon leads its group")

	// The intermediate exits (and is reaped by the worker); the daemon is
	// then reparented to the nearest subreaper: this test process.
	waitFor(t, 5*time.Second, "daemonizer exit", func() bool { return gone(by["daemonizer"][0]) })
	waitFor(t, 5*time.Second, "daemon reparented", func() bool {
		st, ok := readStat(daemon.pid)
		return ok && st.ppid == os.Getpid()
	})

	waitFor(t, 5*time.Second, "markers", func() bool {
		_, e1 := os.Stat(marker)
		_, e2 := os.Stat(marker + ".daemon")
		return e1 == nil && e2 == nil
	})

	sendSignal(t, daemon.pid, daemon.start, unix.SIGTERM)
	sendSignal(t, worker.pid, worker.start, unix.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	assert.True(t, alive(daemon.pid, daemon.start), "daemon must ignore SIGTERM")
	assert.False(t, rr.exited(), "worker must ignore SIGTERM")
}

// Each spawn mode puts its processes where the flag says.
func TestSpawnModes(t *testing.T) {
	self := os.Getpid()
	cases := []struct {
		name  string
		args  []string
		roles map[string]int
		check func(t *testing.T, w procStat, by map[string][]pidEntry)
	}{
		{"child", []string{"--child"}, map[string]int{"child": 1}, func(t *testing.T, w procStat, by map[string][]pidEntry) {
			c := mustStat(t, by["child"][0])
			assert.Equal(t, w.pid, c.ppid)
			assert.Equal(t, w.pgrp, c.pgrp)
			assert.Equal(t, w.sid, c.sid)
		}},
		{"double-fork", []string{"--double-fork"}, map[string]int{"forker": 1, "grandchild": 1}, func(t *testing.T, w procStat, by map[string][]pidEntry) {
			g := by["grandchild"][0]
			waitFor(t, 5*time.Second, "forker exit", func() bool { return gone(by["forker"][0]) })
			waitFor(t, 5*time.Second, "grandchild reparented", func() bool {
				st, ok := readStat(g.pid)
				return ok && st.ppid == self
			})
			gs := mustStat(t, g)
			assert.Equal(t, w.pgrp, gs.pgrp, "no setsid: group kept")
			assert.Equal(t, w.sid, gs.sid)
		}},
		{"child-setpgid", []string{"--child-setpgid"}, map[string]int{"pgchild": 1}, func(t *testing.T, w procStat, by map[string][]pidEntry) {
			c := mustStat(t, by["pgchild"][0])
			assert.Equal(t, c.pid, c.pgrp)
			assert.Equal(t, w.sid, c.sid)
		}},
		{"join-group", []string{"--join-group"}, map[string]int{"host": 1}, func(t *testing.T, w procStat, by map[string][]pidEntry) {
			h := mustStat(t, by["host"][0])
			assert.Equal(t, h.pid, h.pgrp)
			waitFor(t, 5*time.Second, "worker joins host group", func() bool {
				st, ok := readStat(w.pid)
				return ok && st.pgrp == h.pid
			})
		}},
		{"setpgid", []string{"--setpgid"}, nil, func(t *testing.T, w procStat, _ map[string][]pidEntry) {
			assert.Equal(t, w.pid, w.pgrp)
			assert.NotEqual(t, w.pid, w.sid)
		}},
		{"setsid", []string{"--setsid"}, nil, func(t *testing.T, w procStat, _ map[string][]pidEntry) {
			assert.Equal(t, w.pid, w.sid)
			assert.Equal(t, w.pid, w.pgrp)
		}},
		{"nohup", []string{"--nohup"}, map[string]int{"nohup": 1}, func(t *testing.T, w procStat, by map[string][]pidEntry) {
			n := by["nohup"][0]
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.pid))
			require.NoError(t, err)
			var ign uint64
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
					ign, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
					require.NoError(t, err)
				}
			}
			assert.NotZero(t, ign&(1<<(unix.SIGHUP-1)), "SIGHUP must be ignored")
			sendSignal(t, n.pid, n.start, unix.SIGHUP)
			time.Sleep(100 * time.Millisecond)
			assert.True(t, alive(n.pid, n.start))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pf := filepath.Join(t.TempDir(), "pids")
			startProg(t, pf, nil, append([]string{"--pidfile", pf}, c.args...)...)
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
	rr := startProg(t, pf, nil, "--pidfile", pf, "--tree", "100", "--marker", marker)
	waitFor(t, 60*time.Second, "worker marker after the tree", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	var tree []pidEntry
	for _, e := range readPidfile(t, pf) {
		if e.role == "tree" {
			tree = append(tree, e)
		}
	}
	require.Len(t, tree, 100)
	all := allProcs()
	wpid := rr.cmd.Process.Pid
	for _, e := range tree {
		st, ok := all[e.pid]
		require.True(t, ok, "tree node %d missing", e.pid)
		require.Equal(t, e.start, st.start)
		require.NotEqual(t, byte('Z'), st.state)
		// Walk up to the worker: every node must be below it.
		p, hops := st.ppid, 0
		for p != wpid && hops < 10 {
			p, hops = all[p].ppid, hops+1
		}
		require.Equal(t, wpid, p, "tree node %d is not below the worker", e.pid)
	}
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, readPidfile(t, pf), 101, "no more than worker + 100")
}

// --storm N forks N processes without the worker waiting.
func TestStorm(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "pids")
	startProg(t, pf, nil, "--pidfile", pf, "--storm", "40")
	waitRoles(t, pf, map[string]int{"storm": 40})
	time.Sleep(200 * time.Millisecond)
	n := 0
	for _, e := range readPidfile(t, pf) {
		if e.role == "storm" {
			n++
			assert.True(t, alive(e.pid, e.start))
		}
	}
	assert.Equal(t, 40, n)
}

// --zombies N leaves N exited, unreaped children of a living worker.
func TestZombies(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "pids")
	rr := startProg(t, pf, nil, "--pidfile", pf, "--zombies", "5")
	by := waitRoles(t, pf, map[string]int{"zombie": 5})
	for _, z := range by["zombie"] {
		waitFor(t, 5*time.Second, "zombie state", func() bool {
			st, ok := readStat(z.pid)
			return ok && st.state == 'Z' && st.start == z.start
		})
		st, _ := readStat(z.pid)
		assert.Equal(t, rr.cmd.Process.Pid, st.ppid)
	}
	time.Sleep(100 * time.Millisecond)
	assert.False(t, rr.exited(), "worker keeps running")
	// Cleanup kills the worker; the zombies are reparented to us and reaped.
}

// --env-out, --touch-ready, --log and --exit with their delays.
func TestEnvReadyLogExit(t *testing.T) {
	dir := t.TempDir()
	logf, envf, ready := filepath.Join(dir, "log"), filepath.Join(dir, "env"), filepath.Join(dir, "ready")
	began := time.Now()
	rr := startProg(t, "", []string{"OCTOSTORE_FENCING_TERM=17", "OCTOSTORE_SUPERVISOR_READY_FILE=" + ready},
		"--log", logf, "--env-out", envf, "--touch-ready", "--ready-after", "100ms", "--exit", "7", "--exit-after", "400ms")
	waitFor(t, 5*time.Second, "ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	assert.False(t, rr.exited(), "ready comes before the exit")
	assert.Equal(t, 7, rr.exitCode(t, 5*time.Second))
	assert.GreaterOrEqual(t, time.Since(began), 400*time.Millisecond)

	b, err := os.ReadFile(logf)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("started %d term 17\n", rr.cmd.Process.Pid), string(b))
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
	rr := startProg(t, pf, []string{"OCTOSTORE_FENCING_TERM=3"}, "--term-exits", "--log", logf, "--pidfile", pf)
	pid := rr.cmd.Process.Pid
	// The pidfile line is written after the TERM handler is installed.
	waitRoles(t, pf, map[string]int{"worker": 1})
	require.NoError(t, rr.cmd.Process.Signal(unix.SIGTERM))
	assert.Equal(t, 0, rr.exitCode(t, 5*time.Second))
	b, _ := os.ReadFile(logf)
	assert.Equal(t, fmt.Sprintf("started %d term 3\nstopped %d\n", pid, pid), string(b))
}

// --ignore-signals holds in the worker and in its child; markers come from
// both after the delay.
func TestIgnoreSignalsAndMarkers(t *testing.T) {
	dir := t.TempDir()
	pf, marker := filepath.Join(dir, "pids"), filepath.Join(dir, "m")
	rr := startProg(t, pf, nil, "--pidfile", pf, "--ignore-signals", "--child", "--marker", marker, "--marker-after", "300ms")
	by := waitRoles(t, pf, map[string]int{"worker": 1, "child": 1})
	w, c := by["worker"][0], by["child"][0]
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		sendSignal(t, w.pid, w.start, sig)
		sendSignal(t, c.pid, c.start, sig)
	}
	waitFor(t, 5*time.Second, "markers", func() bool {
		_, e1 := os.Stat(marker)
		_, e2 := os.Stat(marker + ".child")
		return e1 == nil && e2 == nil
	})
	assert.False(t, rr.exited())
	assert.True(t, alive(c.pid, c.start))
}

func TestStdoutForge(t *testing.T) {
	rr := startProg(t, "", nil, "--stdout-forge", "--exit", "0")
	l1, _ := rr.nextLine(t, 5*time.Second)
	l2, _ := rr.nextLine(t, 5*time.Second)
	assert.Equal(t, `{"schema_version":1,"source":"octostore-supervisor","sequence":999,"event":"released","kind":"election","name":"room","candidate_id":"agent","term":7}`, l1)
	assert.Equal(t, "worker says hello", l2)
	assert.Equal(t, 0, rr.exitCode(t, 5*time.Second))
	assert.Equal(t, "worker stderr hello\n", rr.stderr.String())
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

	rr := startProg(t, "", []string{"OCTOSTORE_SUPERVISOR_READY_FILE=" + ready}, "--tamper", out, "--exit", "0")
	require.Equal(t, 0, rr.exitCode(t, 10*time.Second), rr.stderr.String())
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rr := startProg(t, "", c.env, c.args...)
			assert.Equal(t, 64, rr.exitCode(t, 5*time.Second))
			msg := rr.stderr.String()
			assert.True(t, strings.HasPrefix(msg, "escaper: ") && strings.Count(msg, "\n") == 1, "stderr %q", msg)
		})
	}
}
