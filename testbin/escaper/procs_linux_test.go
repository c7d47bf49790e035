package main

// Process bookkeeping for the tests. The same file lives in testbin/fakehold
// and testbin/escaper (two separate main packages cannot share test code).
//
// Rules it enforces: the test binary is a child subreaper, so everything it
// starts stays below it even after double forks; a process is only ever
// signalled through a pidfd after its start time was checked, so a recycled
// pid is never hit; a zombie (state Z) counts as dead and orphaned zombies
// are reaped with Wait4 on their own pid; processes owned by an exec.Cmd are
// left for cmd.Wait to reap.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// binPath is the program under test, built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	// Become the subreaper first so orphans of anything we start (daemons,
	// double forks, zombies of a killed parent) come back to us, not to a
	// PID 1 that reaps slowly.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "PR_SET_CHILD_SUBREAPER: %v\n", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "testbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wd, _ := os.Getwd()
	binPath = filepath.Join(dir, filepath.Base(wd))
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	// Final proof for the whole package: nothing we started is alive.
	if left := sweep(10 * time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "survivors after all tests: %v\n", left)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte
	start                string // field 22
}

func (p procStat) String() string {
	return fmt.Sprintf("pid=%d ppid=%d pgrp=%d sid=%d state=%c start=%s", p.pid, p.ppid, p.pgrp, p.sid, p.state, p.start)
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procStat{}, false
	}
	atoi := func(x string) int { n, _ := strconv.Atoi(x); return n }
	return procStat{pid: pid, state: f[0][0], ppid: atoi(f[1]), pgrp: atoi(f[2]), sid: atoi(f[3]), start: f[19]}, true
}

func allProcs() map[int]procStat {
	out := map[int]procStat{}
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out[pid] = st
		}
	}
	return out
}

// descendants lists every process below this test process.
func descendants(all map[int]procStat) []procStat {
	kids := map[int][]int{}
	for _, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	var out []procStat
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			out = append(out, all[c])
			queue = append(queue, c)
		}
	}
	return out
}

// alive: the pid exists with the same start time and is not a zombie.
func alive(pid int, start string) bool {
	st, ok := readStat(pid)
	return ok && st.start == start && st.state != 'Z'
}

// killSame sends SIGKILL through a pidfd, and only after checking that the
// pid still carries the expected start time. The pidfd is opened before the
// check, so if the process dies and the pid is reused in between, the check
// fails; if the check passes, the signal cannot reach any other process.
func killSame(pid int, start string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	defer unix.Close(fd)
	if !alive(pid, start) {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// managed holds pids whose exec.Cmd.Wait has not returned; sweep must not
// reap those itself or cmd.Wait would fail.
var managed sync.Map

// sweep SIGKILLs every live descendant (start time checked) and reaps
// orphaned zombies until nothing below us is alive, or the timeout passes;
// it returns what is still alive then.
func sweep(timeout time.Duration) []procStat {
	deadline := time.Now().Add(timeout)
	self := os.Getpid()
	for {
		all := allProcs()
		var live []procStat
		pending := false
		for _, p := range descendants(all) {
			if p.state != 'Z' {
				live = append(live, p)
				killSame(p.pid, p.start)
				continue
			}
			if p.ppid == self {
				if _, ok := managed.Load(p.pid); ok {
					pending = true // cmd.Wait will reap it
					continue
				}
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
			}
		}
		if len(live) == 0 && !pending {
			return nil
		}
		if time.Now().After(deadline) {
			return live
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type pidEntry struct {
	pid   int
	start string
	role  string
}

// readPidfile parses "PID STARTTIME [ROLE]" lines; a missing file is empty.
func readPidfile(t *testing.T, path string) []pidEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read pidfile: %v", err)
	}
	var out []pidEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			t.Fatalf("malformed pidfile line %q", sc.Text())
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("malformed pidfile line %q", sc.Text())
		}
		e := pidEntry{pid: pid, start: f[1]}
		if len(f) > 2 {
			e.role = f[2]
		}
		out = append(out, e)
	}
	return out
}

// syncBuffer is a goroutine-safe stderr sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is one started program with its stdout split into lines.
type running struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan struct{}
	start  string
}

// startProg starts binPath with args and extra environment. Its stdout is a
// pipe read line by line (a bufio.Reader, so huge lines fit). The process
// is killed and reaped when the test ends, and then the pidfile entries and
// every other descendant are killed and proven dead.
func startProg(t *testing.T, pidfile string, env []string, args ...string) *running {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, args...)
	cmd.Stdout = w
	rr := &running{cmd: cmd, lines: make(chan string, 1024), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = rr.stderr
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pid := cmd.Process.Pid
	managed.Store(pid, true)
	if st, ok := readStat(pid); ok {
		rr.start = st.start
	}
	go func() {
		br := bufio.NewReader(r)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				break
			}
			rr.lines <- strings.TrimSuffix(l, "\n")
		}
		r.Close()
		close(rr.lines)
	}()
	go func() {
		_ = cmd.Wait()
		managed.Delete(pid)
		close(rr.done)
	}()
	t.Cleanup(func() { cleanupAll(t, pidfile, rr) })
	return rr
}

// cleanupAll kills the direct child (exec.Cmd reaps it), then SIGKILLs every
// pidfile entry whose start time still matches, sweeps anything else below
// us, and proves every recorded process dead (gone, recycled or zombie).
func cleanupAll(t *testing.T, pidfile string, rr *running) {
	t.Helper()
	_ = rr.cmd.Process.Signal(syscall.SIGKILL) // pidfd-backed in Go: never a recycled pid
	select {
	case <-rr.done:
	case <-time.After(10 * time.Second):
		t.Errorf("direct child %d not reaped", rr.cmd.Process.Pid)
	}
	var entries []pidEntry
	if pidfile != "" {
		entries = readPidfile(t, pidfile)
		for _, e := range entries {
			killSame(e.pid, e.start)
		}
	}
	if left := sweep(10 * time.Second); len(left) > 0 {
		t.Errorf("processes still alive after cleanup: %v", left)
	}
	for _, e := range entries {
		if alive(e.pid, e.start) {
			t.Errorf("recorded process %d (%s) survived", e.pid, e.role)
		}
	}
}

// exitCode waits for the program and returns its exit status (-1 if killed
// by a signal).
func (rr *running) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-rr.done:
	case <-time.After(timeout):
		t.Fatalf("program did not exit within %v; stderr: %s", timeout, rr.stderr)
	}
	return rr.cmd.ProcessState.ExitCode()
}

func (rr *running) exited() bool {
	select {
	case <-rr.done:
		return true
	default:
		return false
	}
}

// nextLine returns the next stdout line; ok is false at EOF.
func (rr *running) nextLine(t *testing.T, timeout time.Duration) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-rr.lines:
		return l, ok
	case <-time.After(timeout):
		t.Fatalf("no stdout line within %v; stderr: %s", timeout, rr.stderr)
		return "", false
	}
}

// waitFor polls cond every 10 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sendSignal signals a recorded process through a pidfd after checking its
// start time, like killSame.
func sendSignal(t *testing.T, pid int, start string, sig unix.Signal) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	if !alive(pid, start) {
		t.Fatalf("process %d is not alive (or was recycled)", pid)
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		t.Fatalf("signal %d: %v", pid, err)
	}
}
