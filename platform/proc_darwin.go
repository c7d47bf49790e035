package platform

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// Proc is one process as the kernel reported it. On macOS the fields come from
// sysctl kern.proc through gopsutil, one call per field.
type Proc struct {
	Pid        int
	PPid       int
	Pgid       int
	Sid        int
	State      byte
	StartTicks uint64 // creation time in ms since the epoch
	Comm       string
}

// Dead reports whether the process can no longer run.
func (p Proc) Dead() bool { return p.State == 'Z' }

// ProcReader reads the process table.
type ProcReader struct{}

// NewProcReader returns a reader.
func NewProcReader() *ProcReader { return &ProcReader{} }

// ErrNoProcess means the pid does not exist (any more).
var ErrNoProcess = errors.New("no such process")

// Stat reads one process.
func (r *ProcReader) Stat(pid int) (Proc, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return Proc{}, ErrNoProcess
	}
	ppid, err := p.Ppid()
	if err != nil {
		return Proc{}, ErrNoProcess
	}
	created, err := p.CreateTime()
	if err != nil {
		return Proc{}, ErrNoProcess
	}
	out := Proc{Pid: pid, PPid: int(ppid), StartTicks: uint64(created), State: 'R'}
	if st, err := p.Status(); err == nil && len(st) > 0 && st[0] == process.Zombie {
		out.State = 'Z'
	}
	if pg, err := unix.Getpgid(pid); err == nil {
		out.Pgid = pg
	}
	if name, err := p.Name(); err == nil {
		out.Comm = name
	}
	return out, nil
}

// Descendants returns every process below root found through parent links,
// without the skipped pids and their subtrees. macOS has no child subreaper, so an
// orphan re-parents to launchd and drops out of this walk: the documented limit of
// the macOS backend.
func (r *ProcReader) Descendants(root int, dst []Proc, skip ...int) ([]Proc, error) {
	pids, err := process.Pids()
	if err != nil {
		return dst, fmt.Errorf("list processes: %w", err)
	}
	children := map[int][]Proc{}
	for _, pid := range pids {
		p, err := r.Stat(int(pid))
		if err != nil {
			continue
		}
		children[p.PPid] = append(children[p.PPid], p)
	}
	queue := append([]Proc(nil), children[root]...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if containsInt(skip, p.Pid) {
			continue
		}
		dst = append(dst, p)
		queue = append(queue, children[p.Pid]...)
	}
	return dst, nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Signal re-reads p's creation time before kill(2). macOS has no pidfd, so a pid
// recycled between the check and the kill is a (narrow) residual risk, stated in
// the README's macOS limits.
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

// Cmdline returns the command line of pid for diagnostics (best effort).
func Cmdline(pid int) string {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return ""
	}
	c, _ := p.Cmdline()
	return c
}
