package platform

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// Proc is one process as the kernel reported it. On macOS every field but Sid
// comes from one sysctl kern.proc read of its struct kinfo_proc, so pid, parent,
// group, state and start time are one consistent tuple (gopsutil would read
// each field with a call of its own). Pid plus StartTicks identifies a process
// for its whole life.
type Proc struct {
	Pid        int
	PPid       int
	Pgid       int
	Sid        int // getsid(2); 0 when unknown (XNU refuses it for a zombie)
	State      byte
	StartTicks uint64 // p_starttime in microseconds since the epoch
	Comm       string
}

// Dead reports whether the process can no longer run. Unlike Linux, where the
// state shown is the leader thread's and a leader that left while its other
// threads run on looks like a zombie (see the Linux Dead), XNU marks a process
// SZOMB only in proc_exit, after its task's last thread has terminated: a
// zombie here has no thread left, so the state alone judges the whole process.
// (The raw exit syscall on macOS is exit(2) for the process, and pthread_exit
// in main leaves the process running, not a zombie.)
func (p Proc) Dead() bool { return p.State == 'Z' }

// Exiting is always false here. On Linux it warns that a dying process's
// children are moving to the subreaper above it (see the Linux Exiting); macOS
// has no subreaper, a dead shim's orphans go to launchd, and what follows them
// is the group's family (its process group, sessions and every member seen),
// not a walk below the guardian.
func (p Proc) Exiting() bool { return false }

// ProcReader reads the process table. It holds no state, so unlike the Linux
// reader it is safe for concurrent use.
type ProcReader struct{}

// NewProcReader returns a reader.
func NewProcReader() *ProcReader { return &ProcReader{} }

// ErrNoProcess means the pid does not exist (any more).
var ErrNoProcess = errors.New("no such process")

// p_stat values of XNU's bsd/sys/proc.h.
const (
	sIdl   = 1
	sRun   = 2
	sSleep = 3
	sStop  = 4
	sZomb  = 5
)

func procOf(k *unix.KinfoProc) Proc {
	p := Proc{
		Pid:        int(k.Proc.P_pid),
		PPid:       int(k.Eproc.Ppid),
		Pgid:       int(k.Eproc.Pgid),
		StartTicks: uint64(k.Proc.P_starttime.Sec)*1_000_000 + uint64(k.Proc.P_starttime.Usec),
		Comm:       unix.ByteSliceToString(k.Proc.P_comm[:]),
	}
	switch k.Proc.P_stat {
	case sZomb:
		p.State = 'Z'
	case sStop:
		p.State = 'T'
	case sSleep:
		p.State = 'S'
	case sIdl:
		p.State = 'I' // being created: alive
	default:
		p.State = 'R'
	}
	if sid, err := unix.Getsid(p.Pid); err == nil {
		p.Sid = sid
	}
	return p
}

// Stat reads one process with sysctl kern.proc.pid.<pid>.
func (r *ProcReader) Stat(pid int) (Proc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		// A pid nobody holds comes back as an empty answer, which x/sys reports
		// as EIO.
		if errors.Is(err, unix.EIO) || errors.Is(err, unix.ESRCH) {
			return Proc{}, ErrNoProcess
		}
		return Proc{}, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if int(k.Proc.P_pid) != pid {
		return Proc{}, ErrNoProcess
	}
	return procOf(k), nil
}

// All appends every process in the table to dst, read in one sysctl
// kern.proc.all (the kernel's own pid 0 is left out).
func (r *ProcReader) All(dst []Proc) ([]Proc, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return dst, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	for i := range ks {
		if ks[i].Proc.P_pid > 0 {
			dst = append(dst, procOf(&ks[i]))
		}
	}
	return dst, nil
}

// Descendants returns every process below root found through parent links in
// one read of the process table, without the skipped pids and their subtrees.
// macOS has no child subreaper, so an orphan re-parents to launchd and drops
// out of this walk; contain follows such processes by group, session and
// tracking instead, and states what it still cannot follow.
func (r *ProcReader) Descendants(root int, dst []Proc, skip ...int) ([]Proc, error) {
	all, err := r.All(nil)
	if err != nil {
		return dst, err
	}
	return DescendantsIn(all, root, dst, skip...), nil
}

// Signal re-reads p's start time just before kill(2). macOS has no pidfd, so a
// pid recycled between that check and the kill is a narrow residual risk; the
// containment code therefore prefers signalling a process group through a
// leader it has not reaped, whose id cannot have been recycled.
func (r *ProcReader) Signal(p Proc, sig syscall.Signal) error {
	now, err := r.Stat(p.Pid)
	if err != nil || now.StartTicks != p.StartTicks {
		return ErrNoProcess
	}
	if err := unix.Kill(p.Pid, sig); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return ErrNoProcess
		}
		return fmt.Errorf("kill %d: %w", p.Pid, err)
	}
	return nil
}

// Cmdline returns the command line of pid for diagnostics (best effort; gopsutil
// reads it with sysctl KERN_PROCARGS2).
func Cmdline(pid int) string {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return ""
	}
	c, _ := p.Cmdline()
	if len(c) > 200 {
		c = c[:200] + "..."
	}
	return c
}
