//go:build unix

package contain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// ShimMain is the root of one protected group (the hold's or the worker's). The
// guardian starts it in a new process group; it makes itself a child subreaper so
// every orphan of its tree re-parents to it, starts the group's program when told,
// reaps everything, and reports the program's exit. It never exits on its own while
// its tree may hold anything: the guardian kills it after proving the tree empty.
// If the guardian disappears it kills its own tree first (fail closed).
func ShimMain() int {
	reserveThreads()
	if err := errors.Join(adoptInherited(0), platform.BecomeSubreaper()); err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor shim: %v\n", err)
		return ExitSoftware
	}
	_ = platform.SetNonDumpable()
	absorbSignals()

	c, err := inheritedConn()
	if err != nil {
		fmt.Fprintf(os.Stderr, "octostore-supervisor shim: %v\n", err)
		return ExitSoftware
	}
	w := &watched{report: func(pid int, ws unix.WaitStatus) {
		code, sig := exitCodeOf(ws)
		_ = c.send(msg{Op: opExited, Code: code, Signal: sig, Pid: pid})
	}}
	reapAny(&w.mu, w.reaped)

	in := c.pump()
	var prog msg
	for m := range in {
		switch m.Op {
		case opInit:
			prog = m
			if !m.Gated { // the hold, and run's worker, start at once; a gated worker waits for opStart
				pid, err := startNow(prog)
				reply := msg{Op: opReady, Reply: true, Pid: pid}
				if err != nil {
					reply.Err = err.Error()
				}
				// Reply first, then watch: a program that is already gone is
				// reported by watch at once, and that report must come after the
				// reply the guardian is waiting for, or it is taken for the reply.
				_ = c.send(reply)
				w.watch(pid)
				continue
			}
			reply := msg{Op: opReady, Reply: true}
			if m.StartFd != 0 {
				// The worker's helper, started ahead of the gate; the guardian
				// starts the worker through it and tells us its pid.
				var err error
				if reply.Pid, err = startWaitingHelper(programOf(prog, true), os.NewFile(uintptr(m.StartFd), "start")); err != nil {
					reply.Err = err.Error()
				}
			}
			_ = c.send(reply)
		case opStart:
			pid, err := startGated(prog, m)
			reply := msg{Op: opStart, Reply: true, Pid: pid}
			if err != nil {
				reply.Err = err.Error()
			}
			_ = c.send(reply) // before watch, as above
			w.watch(pid)
		case opRelease:
			w.signal(syscall.SIGTERM)
		}
	}
	// The guardian is gone (or told us to go): nothing may outlive this group.
	s := newSweeper()
	s.family = ownFamily()
	if prog.Leaf != "" {
		l := &leaf{dir: prog.Leaf}
		s.container = l.killAndWait
	}
	s.terminate(os.Getpid(), nil, time.Now(), DefaultProofBound, os.Stderr)
	return 0
}

// startNow starts an ungated group's program: the hold, or run's worker,
// through its waiting helper when it has one, told to start at once.
func startNow(prog msg) (int, error) {
	p := programOf(prog, prog.NoNewPrivs)
	if !prog.Isolation.waitsAhead() {
		return startProgram(p)
	}
	wi, err := newWaitingHelper()
	if err != nil {
		return 0, err
	}
	if wi.pid, err = startWaitingHelper(p, wi.peer); err != nil {
		wi.ctl.Close()
		return 0, err
	}
	return wi.start(nil, 0, helperStartBound)
}

// startGated starts the gated worker at the start message m, or, when the
// guardian has started it through its waiting helper already, takes the pid
// m names.
func startGated(prog msg, m msg) (int, error) {
	if m.Pid != 0 {
		return m.Pid, nil
	}
	p := programOf(prog, true)
	p.env, p.fireMs = append(append([]string(nil), prog.Env...), m.Env...), m.FireMs
	return startProgram(p)
}

// programOf is the program an init message names; noNewPrivs as given (a
// gated worker always has it).
func programOf(m msg, noNewPrivs bool) program {
	return program{argv: m.Argv, env: m.Env, noNewPrivs: noNewPrivs, iso: m.Isolation, leaf: m.Leaf, join: m.Join}
}

// program is what a shim starts.
type program struct {
	argv       []string
	env        []string
	noNewPrivs bool       // the worker: no privilege gain through setuid binaries
	iso        *Isolation // the worker: its user and PID namespace, if any
	startPipe  *os.File   // a waiting helper's fd 3, it waits for its start there (startWaiting)
	fireMs     int64      // gated start: refuse once the armed deadline has passed
	leaf       string     // cgroup backend: the leaf the program must be born in (fd 6)
	join       bool       // clone3 is refused: enter the leaf through the join re-exec
}

// startProgram runs the group's program with stdin /dev/null and the inherited
// output descriptors. A gated start re-checks the armed deadline on the continuous
// clock first, so a supervisor frozen at the gate cannot release work late. Under
// the cgroup backend the program is born inside its leaf (clone3 with
// CLONE_INTO_CGROUP); where clone3 is refused it is started through our own join
// helper, which enters the leaf and only then execs it, so no instruction of the
// program ever runs outside.
func startProgram(p program) (int, error) {
	if err := beforeDeadline(p.fireMs); err != nil {
		return 0, err
	}
	// The child has its copies; ours would keep the event pipe open after the hold
	// exits and hide its end-of-stream from the supervisor, and our stdin (the
	// program's: /dev/null, or the embedded hold's token) is for it alone.
	defer unix.Close(0)
	defer unix.Close(fdOut)
	defer unix.Close(fdErr)
	if p.leaf != "" {
		// Only the cgroup backend hands a leaf over as fd 6. Without one,
		// 6 is whatever this process opened next: the Go runtime's epoll
		// descriptor, when its poller started on the first free number, and
		// closing that crashed the shim (epollwait failed with EBADF).
		defer unix.Close(fdLeaf)
	}
	follow, err := p.shimPidfd()
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	if follow != nil {
		defer follow.Close()
	}
	spawn := func(path string, argv []string, sys *syscall.SysProcAttr) (int, error) {
		return p.spawn(path, argv, sys, follow)
	}
	path, argv, sys, err := isolate(p.iso, p.argv, p.startPipe != nil, followFd(p.startPipe, follow))
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	if p.leaf == "" {
		pid, err := spawn(path, argv, sys)
		if err != nil {
			return 0, fmt.Errorf("start %s: %w", p.argv[0], err)
		}
		return pid, nil
	}
	if !p.join {
		pid, err := spawn(path, argv, intoCgroup(sys, fdLeaf))
		if err == nil {
			return pid, nil
		}
		if !clone3Refused(err) {
			return 0, fmt.Errorf("start %s in %s: %w", p.argv[0], p.leaf, err)
		}
	}
	exe, err := selfExe()
	if err != nil {
		return 0, err
	}
	// The join helper must enter the leaf as us (its files are ours, never
	// the worker user's); it takes the worker's identity itself, after.
	user := "-"
	if sys.Credential != nil {
		user, sys.Credential = p.iso.User.spec(), nil
	}
	pid, err := spawn(exe, append([]string{"octostore-supervisor", JoinArg, p.leaf, user, "--", path}, argv[1:]...), sys)
	if err != nil {
		return 0, fmt.Errorf("start %s through the cgroup join helper: %w", p.argv[0], err)
	}
	return pid, nil
}

// spawn starts path with the program's descriptors (and follow, the shim's
// pidfd, when not nil) from a thread of our own, restricted as the program
// must start (restrictThread): no_new_privs and the Landlock scope are
// properties of the thread that forks, so that thread is thrown away
// afterwards (the goroutine exits locked).
func (p program) spawn(path string, argv []string, sys *syscall.SysProcAttr, follow *os.File) (int, error) {
	type result struct {
		pid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := p.restrictThread(); err != nil {
			done <- result{0, err}
			return
		}
		files := []uintptr{0, fdOut, fdErr}
		if p.startPipe != nil {
			files = append(files, p.startPipe.Fd())
		}
		if follow != nil {
			files = append(files, follow.Fd())
		}
		pid, _, err := syscall.StartProcess(path, argv, &syscall.ProcAttr{Env: p.env, Files: files, Sys: sys})
		done <- result{pid, err}
	}()
	r := <-done
	return r.pid, r.err
}

// followFd is the number follow gets in the child (startProgram's files:
// 0-2, then the start pipe when there is one); 0 without follow.
func followFd(startPipe, follow *os.File) int {
	switch {
	case follow == nil:
		return 0
	case startPipe != nil:
		return 4
	}
	return 3
}

// restrictThread sets what the program starts with on the calling thread,
// which forks it: no_new_privs, and the worker's Landlock scope, which
// without CAP_SYS_ADMIN (a non-root supervisor, or root in a container)
// needs no_new_privs first.
func (p program) restrictThread() error {
	if p.noNewPrivs {
		if err := platform.SetNoNewPrivs(); err != nil {
			return err
		}
	}
	if p.iso != nil && p.iso.Scope {
		if _, err := readyForLandlock(); err != nil {
			return err
		}
		if err := platform.ScopeThread(); err != nil {
			return fmt.Errorf("scope the worker (Landlock; --no-worker-scope starts it without): %w", err)
		}
	}
	return nil
}

// beforeDeadline refuses a gated start once the armed deadline (fireMs on the
// continuous clock; 0 for an ungated start) has passed.
func beforeDeadline(fireMs int64) error {
	if fireMs == 0 {
		return nil
	}
	now, err := platform.ContinuousMillis()
	if err != nil {
		return err
	}
	if now >= fireMs {
		return errors.New("deadline passed before the worker could start")
	}
	return nil
}

// waitingHelper is a worker's helper started when the worker's group is set
// up, ahead of the gate: its PID-namespace init (--private-pids), or its
// pre-start helper (the fence; prestart_linux.go). Namespaces, the init's own
// /proc, the fence and a start of our own binary all happen before authority
// arrives, and the gate costs one write. It is born in the worker's
// container like the worker, and it starts nothing until told: a teardown
// before the gate finds it waiting and ends it (INT, TERM or HUP end it at
// once; one that lands in the instant between its exec and its runtime's
// start is dropped, as any namespace init drops signals it has no handler
// for, and the KILL after the grace ends it instead).
//
// Its fd 3 is a stream socket whose other end, ctl, is the guardian's for a
// gated worker (the start is then one wake-up away from the worker's fork,
// as the shim's own fork is) and the shim's in run. The start message comes
// in, then ctl half-closes; the pre-start helper answers with the pid of the
// worker it forked as the shim's child, and closes. A helper that closes
// without an answer (the namespace init, or a pre-start helper that could
// not start the worker) stands for the worker itself: its exit is the
// worker's.
type waitingHelper struct {
	pid  int      // the helper's own
	ctl  *os.File // our end of its fd 3
	peer *os.File // its fd 3 until it is started, closed once passed on
}

// newWaitingHelper makes a helper's start channel, before the helper exists.
func newWaitingHelper() (*waitingHelper, error) {
	ours, theirs, err := socketpair()
	if err != nil {
		return nil, fmt.Errorf("create the worker's start channel: %w", err)
	}
	return &waitingHelper{ctl: ours, peer: theirs}, nil
}

// startWaitingHelper starts p's waiting helper with start as its fd 3.
func startWaitingHelper(p program, start *os.File) (int, error) {
	defer start.Close()
	p.startPipe = start
	return startProgram(p)
}

// start checks the deadline (fireMs on the continuous clock; 0: none) and
// hands the helper the worker's added environment, which makes it start the
// worker; ctl closed unwritten makes it exit without. It returns the pid to
// watch for the worker's exit: the one the helper names within bound, or
// the helper's own.
func (wi *waitingHelper) start(env []string, fireMs int64, bound time.Duration) (int, error) {
	defer wi.ctl.Close()
	if err := beforeDeadline(fireMs); err != nil {
		return 0, err
	}
	b, err := json.Marshal(env)
	if err == nil {
		_, err = wi.ctl.Write(b)
	}
	if err == nil {
		err = shutdownWrite(wi.ctl)
	}
	if err != nil {
		return 0, fmt.Errorf("start the worker through its waiting helper: %w", err)
	}
	return wi.named(bound)
}

// How long a started helper may take to name the worker. One that says
// nothing for this long is stopped or broken, and the start fails, so the
// worker it may have started is torn down with its group; meanwhile
// whoever reads the answer waits. At the gate (helperAnswerBound) the
// helper has long been waiting: its fork and exec take about a millisecond
// here and tens under emulation. In run (helperStartBound) the helper is
// told to start as it is started, so its own start and fence come first:
// seconds under emulation on a busy machine.
const (
	helperAnswerBound = 5 * time.Second
	helperStartBound  = 30 * time.Second
)

// named reads the helper's answer: the worker's pid, or the helper's own
// when it closed the channel without one (or the helper died: its end of the
// channel goes with it).
func (wi *waitingHelper) named(bound time.Duration) (int, error) {
	if err := wi.ctl.SetReadDeadline(time.Now().Add(bound)); err != nil {
		return 0, fmt.Errorf("wait for the worker's helper: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(wi.ctl, 32))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, fmt.Errorf("the worker's helper did not say it started the worker within %v", bound)
	}
	if pid, perr := strconv.Atoi(string(b)); err == nil && perr == nil && pid > 0 {
		return pid, nil
	}
	return wi.pid, nil
}

// shutdownWrite half-closes a stream socket: the peer reads to its end, we
// can still read its answer. Through the raw conn: Fd would make the file
// blocking and its reads deaf to the deadline.
func shutdownWrite(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) }); err != nil {
		return err
	}
	return serr
}

// watched is the one program a shim started. Its exit may be reaped before
// StartProcess has even returned its pid, so statuses of unknown pids are kept
// until watch claims them.
type watched struct {
	mu     sync.Mutex
	pid    int
	done   bool
	early  map[int]unix.WaitStatus
	report func(pid int, ws unix.WaitStatus)
}

// reaped runs under w.mu (held by the reaper).
func (w *watched) reaped(pid int, ws unix.WaitStatus) {
	if pid == w.pid {
		w.done = true
		w.report(pid, ws)
		return
	}
	if w.pid == 0 {
		if w.early == nil {
			w.early = make(map[int]unix.WaitStatus)
		}
		w.early[pid] = ws
	}
}

func (w *watched) watch(pid int) {
	if pid == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pid = pid
	if ws, ok := w.early[pid]; ok {
		w.done = true
		w.report(pid, ws)
	}
	w.early = nil
}

// signal sends sig to the program while it is unreaped: its pid cannot have been
// recycled, and the lock keeps the reaper from reaping it in between.
func (w *watched) signal(sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pid != 0 && !w.done {
		_ = unix.Kill(w.pid, sig)
	}
}
