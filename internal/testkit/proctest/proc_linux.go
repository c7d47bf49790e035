package proctest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// readers hands out /proc readers: a platform.ProcReader is not safe for
// concurrent use, and parallel tests call in here at once.
var readers = sync.Pool{New: func() any { return platform.NewProcReader() }}

// Stat reads pid from /proc in one read (platform.ProcReader.Stat); unlike a
// ProcReader it is safe for concurrent use. It returns platform.ErrNoProcess
// when pid does not exist.
func Stat(pid int) (platform.Proc, error) {
	r := readers.Get().(*platform.ProcReader)
	defer readers.Put(r)
	return r.Stat(pid)
}

// Alive reports whether the recorded process can still run: its pid exists,
// carries the recorded start time and is not a zombie. A recycled pid is
// someone else, and a zombie is dead.
func (r Record) Alive() bool {
	p, err := Stat(r.Pid)
	return err == nil && p.StartTicks == r.Start && !p.Dead()
}

// Alive returns the records whose processes can still run (see Record.Alive).
func Alive(recs []Record) []Record {
	var alive []Record
	for _, rec := range recs {
		if rec.Alive() {
			alive = append(alive, rec)
		}
	}
	return alive
}

// Signal sends sig to the recorded process, and only to it: it fails with an
// error wrapping platform.ErrNoProcess when the process is gone, was recycled
// or is a zombie, and otherwise signals through platform.ProcReader.Signal,
// which holds a pidfd while it checks the start time.
func Signal(rec Record, sig syscall.Signal) error {
	if !rec.Alive() {
		return fmt.Errorf("signal %v: %w (gone, recycled or a zombie)", rec, platform.ErrNoProcess)
	}
	r := readers.Get().(*platform.ProcReader)
	defer readers.Put(r)
	if err := r.Signal(rec.proc(), sig); err != nil {
		return fmt.Errorf("signal %v: %w", rec, err)
	}
	return nil
}

// Kill sends SIGKILL to every record that is still the process it names and
// skips the rest; it returns only unexpected failures (never "no such
// process"). Kill does not wait: check Alive afterwards.
func Kill(recs ...Record) error {
	var errs []error
	for _, rec := range recs {
		if err := Signal(rec, syscall.SIGKILL); err != nil && !errors.Is(err, platform.ErrNoProcess) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Reap collects each record that is now a zombie orphaned to this process (the
// subreaper), by its own pid, so it stops occupying the process table. Records
// that are alive, gone, recycled, someone else's child or still owned by a Prog
// are left alone.
func Reap(recs ...Record) {
	for _, rec := range recs {
		reapOrphan(rec.proc())
	}
}

func (r Record) proc() platform.Proc { return platform.Proc{Pid: r.Pid, StartTicks: r.Start} }

// owned holds the pids of processes started by Prog whose exec.Cmd.Wait has not
// returned: only Wait may reap those, or it would fail with ECHILD. Start holds
// the lock across fork and registration, so a scan never sees an unregistered
// Prog child.
var owned = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// reapOrphan reaps p if it is, read again now, the same process (same start
// time), a zombie and a child of this process that no Prog owns. It reports
// whether p is instead a zombie that a Prog's Wait still has to reap. Every reap
// in this package happens under owned's lock after that re-read, so p cannot be
// reaped and its pid recycled in between by this package; the only other
// reapers are exec.Cmds, which take only their own children: Prog's are in
// owned, and a recorded process is never a test's direct child.
func reapOrphan(p platform.Proc) (pending bool) {
	owned.Lock()
	defer owned.Unlock()
	now, err := Stat(p.Pid)
	if err != nil || now.StartTicks != p.StartTicks || !now.Dead() {
		return false
	}
	if owned.pids[p.Pid] {
		return true
	}
	if now.PPid == os.Getpid() {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
	}
	return false
}

// AllThreadsStopped reports whether every thread of pid is stopped. A group
// stop reaches each thread on its own way back to user space, so the leader
// can show T while another thread still runs (and, say, acts on a SIGCHLD).
// Only when every thread is stopped (or exiting) does the process do nothing
// more.
func AllThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			return false
		}
		p, err := Stat(tid)
		if errors.Is(err, platform.ErrNoProcess) {
			continue // a thread that just exited
		}
		if err != nil || (p.State != 'T' && p.State != 't' && p.State != 'Z' && p.State != 'X') {
			return false
		}
	}
	return true
}
