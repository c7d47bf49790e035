package proctest

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Binary is the path of a program built for the tests (see Build).
type Binary string

// Prog is one program a test started with Binary.Start.
type Prog struct {
	Cmd *exec.Cmd
	// Lines delivers stdout line by line, without the newline, and is closed
	// at EOF. It is read through a bufio.Reader, so a line of any length fits;
	// a last line without a newline is dropped.
	Lines <-chan string
	// Stderr collects the program's stderr.
	Stderr *SyncBuffer
	done   <-chan struct{}
}

// StartOwned starts cmd and waits for it on a goroutine of its own; the
// returned channel is closed once that Wait has returned (cmd.ProcessState is
// then set). Until then Sweep leaves cmd's zombie to that Wait instead of
// reaping it, so a harness that runs its own exec.Cmd (internal/testkit/etcdtest's
// members) can live beside Sweep.
//
// A cmd that asks for a parent-death signal (SysProcAttr.Pdeathsig) is forked
// on an OS thread kept locked until the child has been reaped. The kernel
// sends that signal when the thread that forked the child ends, not the
// process, and Go ends a thread whose goroutine returns while locked to it, as
// the product's throwaway probe threads do (doctor, run in-process by a test).
// Forked on any pooled thread, the child could be killed mid-test by a probe
// that happened to run on that thread later.
func StartOwned(cmd *exec.Cmd) (<-chan struct{}, error) {
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0 {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread() // after the reap: nothing is tied to it then
		}
		err := startRecorded(cmd)
		started <- err
		if err != nil {
			return
		}
		_ = cmd.Wait()
		owned.Lock()
		delete(owned.pids, cmd.Process.Pid)
		owned.Unlock()
		close(done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// startRecorded starts cmd and records it as owned under owned's lock, so no
// Sweep sees it unrecorded.
func startRecorded(cmd *exec.Cmd) error {
	owned.Lock()
	defer owned.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	owned.pids[cmd.Process.Pid] = true
	return nil
}

// Start runs the program with args and env added to the test's environment.
// When the test ends it kills the program (exec.Cmd reaps it), SIGKILLs every
// process recorded in pidfile ("" for none) that is still the one recorded,
// sweeps everything else below the test process (see Sweep, and its rule about
// parallel tests), and fails the test unless all of it, and every record in
// particular, is proven dead.
func (b Binary) Start(t testing.TB, pidfile string, env []string, args ...string) *Prog {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	lines := make(chan string, 1024)
	p := &Prog{Cmd: exec.Command(string(b), args...), Lines: lines, Stderr: &SyncBuffer{}}
	p.Cmd.Stdout, p.Cmd.Stderr = w, p.Stderr
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.WaitDelay = 5 * time.Second

	done, err := StartOwned(p.Cmd)
	w.Close()
	if err != nil {
		r.Close()
		require.NoError(t, err)
	}
	p.done = done

	go func() {
		br := bufio.NewReader(r)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				break
			}
			lines <- strings.TrimSuffix(l, "\n")
		}
		r.Close()
		close(lines)
	}()
	t.Cleanup(func() { p.stop(t, pidfile) })
	return p
}

// stop kills the program and proves dead everything it left.
func (p *Prog) stop(t testing.TB, pidfile string) {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGKILL) // pidfd-backed in Go: never a recycled pid
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("direct child %d not reaped", p.Cmd.Process.Pid)
	}
	var recs []Record
	if pidfile != "" {
		var err error
		if recs, err = ReadPidfile(pidfile); err != nil {
			t.Errorf("%v", err) // the well-formed records are still killed and checked
		}
		if err := Kill(recs...); err != nil {
			t.Errorf("kill recorded processes: %v", err)
		}
	}
	if left, err := Sweep(10 * time.Second); err != nil || len(left) > 0 {
		t.Errorf("processes still alive after cleanup: %s (sweep error: %v)", Describe(left), err)
	}
	for _, rec := range Alive(recs) {
		t.Errorf("recorded process %v survived", rec)
	}
}

// ExitCode waits up to timeout for the program to exit and returns its exit
// status (-1 if a signal killed it); it fails the test on timeout.
func (p *Prog) ExitCode(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("program did not exit within %v; stderr: %s", timeout, p.Stderr)
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Exited reports whether the program has exited and been reaped.
func (p *Prog) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// NextLine returns the next stdout line, or ok false at EOF; it fails the test
// if no line comes within timeout.
func (p *Prog) NextLine(t testing.TB, timeout time.Duration) (line string, ok bool) {
	t.Helper()
	select {
	case line, ok = <-p.Lines:
		return line, ok
	case <-time.After(timeout):
		t.Fatalf("no stdout line within %v; stderr: %s", timeout, p.Stderr)
		return "", false
	}
}
