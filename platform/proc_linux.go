package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Proc is one process as the kernel reported it in a single read of
// /proc/PID/stat. Pid plus StartTicks identifies a process for its whole life:
// a recycled pid always comes back with a later start time.
type Proc struct {
	Pid        int
	PPid       int
	Pgid       int
	Sid        int
	State      byte // R, S, D, T, t, Z, X, ...: the thread-group leader's state
	Threads    int  // num_threads: the group's threads not yet released, the leader included
	StartTicks uint64
	Comm       string
	flags      uint64 // the leader thread's task flags (field 9)
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h).
const pfExiting = 0x4

// Exiting reports whether the process has begun to exit (its leader thread has,
// and a group exit takes the leader too) without being Dead yet: a SIGKILLed
// process of several threads is in this state for a while. Its children do not
// wait for it: when its last thread that is not exiting is gone, each exiting
// thread hands its children to the subreaper at once, before the process shows
// as a zombie. A walk below such a process can find it empty while its orphans
// already run below the subreaper.
func (p Proc) Exiting() bool { return p.flags&pfExiting != 0 }

// Dead reports whether the process can no longer run: a zombie waiting to be
// reaped, or one already being torn down. Zombies are not survivors.
//
// The state in /proc/PID/stat is the leader thread's alone. A leader that left
// with the raw exit syscall (or pthread_exit) while other threads run shows Z
// ("Zl" in ps) although the process runs on; the kernel keeps such a leader
// unreaped until the last thread exits, so num_threads still counts it: 1 for a
// real zombie, more while any thread lives. Such a process is alive; a
// SIGKILL through its pid (a pidfd) reaches and ends the whole group.
func (p Proc) Dead() bool {
	return (p.State == 'Z' || p.State == 'X' || p.State == 'x') && p.Threads <= 1
}

// ProcReader reads /proc with one reusable buffer. gopsutil reads /proc/PID/stat
// again for every field it returns, so ppid, state and start time would come from
// different instants; the teardown path needs them from one read, because that
// tuple is what proves a pid still names the process we decided to signal. It also
// allocates per process, which matters when a 5000-process tree is swept in a loop.
type ProcReader struct {
	buf  []byte
	dirb []byte
	// childLists: the kernel keeps per-thread lists of children
	// (CONFIG_PROC_CHILDREN), so Descendants can walk the tree alone.
	childLists bool
}

// NewProcReader returns a reader; it is not safe for concurrent use.
func NewProcReader() *ProcReader {
	self := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/children"
	return &ProcReader{buf: make([]byte, 4096), dirb: make([]byte, 64<<10), childLists: unix.Access(self, unix.R_OK) == nil}
}

// ErrNoProcess means the pid does not exist (any more).
var ErrNoProcess = errors.New("no such process")

// Stat reads /proc/PID/stat.
func (r *ProcReader) Stat(pid int) (Proc, error) {
	var path [32]byte
	p := append(path[:0], "/proc/"...)
	p = strconv.AppendInt(p, int64(pid), 10)
	p = append(p, "/stat"...)
	fd, err := unix.Open(string(p), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return Proc{}, ErrNoProcess
		}
		return Proc{}, fmt.Errorf("open /proc/%d/stat: %w", pid, err)
	}
	n, err := unix.Read(fd, r.buf)
	unix.Close(fd)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return Proc{}, ErrNoProcess
		}
		return Proc{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return parseStat(pid, r.buf[:n])
}

func parseStat(pid int, b []byte) (Proc, error) {
	// comm may contain spaces and parentheses; it ends at the last ')'.
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat: unexpected format", pid)
	}
	p := Proc{Pid: pid, Comm: string(b[open+1 : end])}
	fields := bytes.Fields(b[end+2:])
	// fields[0] is field 3 (state); num_threads is field 20, start time 22.
	if len(fields) < 20 || len(fields[0]) != 1 {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat: too few fields", pid)
	}
	p.State = fields[0][0]
	var err error
	ints := [...]*int{&p.PPid, &p.Pgid, &p.Sid}
	for i, dst := range ints {
		if *dst, err = strconv.Atoi(string(fields[1+i])); err != nil {
			return Proc{}, fmt.Errorf("parse /proc/%d/stat field %d: %w", pid, 4+i, err)
		}
	}
	if p.flags, err = strconv.ParseUint(string(fields[6]), 10, 64); err != nil {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat flags: %w", pid, err)
	}
	var ok bool
	if p.Threads, ok = atoiPositive(fields[17]); !ok {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat num_threads: %q", pid, fields[17])
	}
	if p.StartTicks, err = strconv.ParseUint(string(fields[19]), 10, 64); err != nil {
		return Proc{}, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return p, nil
}

// Pids lists the numeric entries of /proc (thread-group leaders only), appending to dst.
func (r *ProcReader) Pids(dst []int) ([]int, error) {
	return r.numericEntries("/proc", dst)
}

// numericEntries appends the numeric names in directory dir to dst: pids in
// /proc, thread ids in /proc/PID/task. It reads with getdents into the
// reader's buffer because os.ReadDir allocates an entry per name, and the
// teardown path lists directories in a loop.
func (r *ProcReader) numericEntries(dir string, dst []int) ([]int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if gone(err) {
			return dst, ErrNoProcess
		}
		return dst, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	return r.readNumericEntries(fd, dir, dst)
}

// gone: the process whose /proc directory was being read has exited.
func gone(err error) bool { return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) }

// readNumericEntries reads the open directory fd (named dir). A process that
// exits after its task directory was opened makes getdents fail with
// ENOENT: that is ErrNoProcess too, not a failed scan.
func (r *ProcReader) readNumericEntries(fd int, dir string, dst []int) ([]int, error) {
	for {
		n, err := unix.Getdents(fd, r.dirb)
		if gone(err) {
			return dst, ErrNoProcess
		}
		if err != nil {
			return dst, fmt.Errorf("read %s: %w", dir, err)
		}
		if n == 0 {
			return dst, nil
		}
		b := r.dirb[:n]
		for len(b) > 0 {
			// struct linux_dirent64: ino(8) off(8) reclen(2) type(1) name...
			reclen := int(b[16]) | int(b[17])<<8
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if id, ok := atoiPositive(name); ok {
				dst = append(dst, id)
			}
			b = b[reclen:]
		}
	}
}

func atoiPositive(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n > 0
}

// Descendants returns every process below root, appended to dst: root's
// children, theirs, and so on, zombies included. Root itself is not included,
// nor are the skipped pids and their subtrees. Processes that exit during the
// walk are simply absent; callers loop until a walk finds nothing alive.
//
// It walks the kernel's lists of children (/proc/PID/task/TID/children) from
// root, so its cost follows the size of the tree, not of the whole process
// table: a teardown walks several times, and on a host running fifty
// supervisors a walk of the whole table costs each of them as much as all the
// others' trees together. Where the kernel has no such lists
// (CONFIG_PROC_CHILDREN unset) it scans the whole table instead
// (scanDescendants), with the same result.
//
// Why a walk that finds nothing alive proves the tree empty, for callers whose
// root is a child subreaper: a process with children has not exited (the
// kernel re-parents children before a process becomes a zombie), so every live
// process below root hangs, through live processes only, from one of root's
// children. The walk ends with a read of root's own lists that shows no child
// it has not already read: each of those was read as a zombie or gone, and a
// process that was dead cannot be the live top of such a chain. A child that
// moved to root while the walk ran (its parent exited: the subreaper takes it)
// appears in that last read and is walked in turn. The lists are per thread,
// and a child moves between them when its thread exits; children only returns
// lists read while the set of threads held still (or the whole table is
// scanned), so no child is lost between two of them.
func (r *ProcReader) Descendants(root int, dst []Proc, skip ...int) ([]Proc, error) {
	if !r.childLists {
		return r.scanDescendants(root, dst, skip...)
	}
	out, err := r.walk(root, dst, skip)
	if errors.Is(err, errUnsettled) {
		return r.scanDescendants(root, dst, skip...)
	}
	return out, err
}

// walk is Descendants through the lists of children.
func (r *ProcReader) walk(root int, dst []Proc, skip []int) ([]Proc, error) {
	seen := make(map[int]bool, 8+len(skip))
	seen[root] = true
	for _, pid := range skip {
		seen[pid] = true
	}
	var queue []int
	enqueue := func(kids []int) (added int) {
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				queue = append(queue, k)
				added++
			}
		}
		return added
	}
	for {
		kids, err := r.children(root, 0)
		if err != nil && !errors.Is(err, ErrNoProcess) {
			return dst, err
		}
		// A root that is gone has no children: its orphans are another
		// subreaper's, which callers check for (the guardian's shimAlive).
		if enqueue(kids) == 0 {
			return dst, nil
		}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			p, err := r.Stat(pid)
			if errors.Is(err, ErrNoProcess) {
				continue // gone; its children went to a subreaper, root at the latest
			}
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
			if p.Dead() {
				continue // exited: its children were re-parented before it became a zombie
			}
			if kids, err = r.children(pid, p.Threads); err != nil && !errors.Is(err, ErrNoProcess) {
				return dst, err
			}
			enqueue(kids)
		}
	}
}

// children returns the kernel's list of pid's children, read per thread: a
// child is listed under the thread that forked it. threads is pid's thread
// count from the Stat just read; for 1 the leader's list is read directly,
// without listing the task directory (a thread created after that Stat can
// only fork while pid is alive, which the walk has already seen).
//
// When a thread exits, its children move to another thread's list, which may
// already have been read: the shim starts the worker from a thread it then
// discards, so this happens at every start. The lists therefore count only
// if the set of threads was the same before and after they were read; after
// a few unsettled tries it gives up with errUnsettled, and Descendants scans
// the whole table instead (a process churning threads cannot hide a child
// from that scan, which goes by the parent's thread-group id).
func (r *ProcReader) children(pid, threads int) ([]int, error) {
	if threads == 1 {
		return r.childList(pid, pid, nil)
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	for range 3 {
		before, err := r.numericEntries(dir, nil)
		if err != nil {
			return nil, err
		}
		var kids []int
		settled := true
		for _, tid := range before {
			if kids, err = r.childList(pid, tid, kids); errors.Is(err, ErrNoProcess) {
				settled = false // the thread exited: its children moved
				break
			} else if err != nil {
				return nil, err
			}
		}
		after, err := r.numericEntries(dir, nil)
		if err != nil {
			return nil, err
		}
		if settled && slices.Equal(before, after) {
			return kids, nil
		}
	}
	return nil, errUnsettled
}

// errUnsettled: a process's threads kept changing while its lists of
// children were read.
var errUnsettled = errors.New("threads changed during every read of the lists of children")

// childList appends to kids the children listed under thread tid of pid.
func (r *ProcReader) childList(pid, tid int, kids []int) ([]int, error) {
	b, err := r.readFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/children")
	if err != nil {
		return kids, err
	}
	for _, f := range bytes.Fields(b) {
		if k, ok := atoiPositive(f); ok {
			kids = append(kids, k)
		}
	}
	return kids, nil
}

// readFile reads a whole /proc file into the reader's buffer, growing it as
// needed (a list of thousands of children is longer than a page).
func (r *ProcReader) readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return nil, ErrNoProcess
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err != nil {
			if errors.Is(err, unix.ESRCH) {
				return nil, ErrNoProcess
			}
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

// scanDescendants is Descendants by one scan of the whole of /proc, for
// kernels without lists of children.
func (r *ProcReader) scanDescendants(root int, dst []Proc, skip ...int) ([]Proc, error) {
	pids, err := r.Pids(make([]int, 0, 512))
	if err != nil {
		return dst, err
	}
	all := make([]Proc, 0, len(pids))
	for _, pid := range pids {
		p, err := r.Stat(pid)
		if err != nil {
			if errors.Is(err, ErrNoProcess) {
				continue
			}
			return dst, err
		}
		all = append(all, p)
	}
	// The scan reads one process at a time, so it is not one instant: when a
	// middle process exits between the reads of its child and of itself, the
	// child's parent link points at a process the scan no longer has, and the
	// child is missed - while the kernel has re-parented it to the nearest
	// subreaper, which is root in every caller that proves a tree empty. The
	// kernel's own list of root's children, read after the scan, has it (where
	// the kernel keeps such lists at all).
	if kids, err := r.children(root, 0); err == nil {
		for _, pid := range kids {
			if !slices.ContainsFunc(all, func(p Proc) bool { return p.Pid == pid }) {
				if p, err := r.Stat(pid); err == nil {
					all = append(all, p)
				}
			}
		}
	}
	return DescendantsIn(all, root, dst, skip...), nil
}

// Signal delivers sig to exactly the process p names, never to a process that
// reused its pid: it opens a pidfd, then checks that the pid still carries p's start
// time. If the check passes the pidfd refers to p (a pid cannot be recycled while
// the process holding it is unreaped), and pidfd_send_signal cannot reach anyone
// else even if p dies a moment later. It returns ErrNoProcess when p is gone.
func (r *ProcReader) Signal(p Proc, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return ErrNoProcess
		}
		return fmt.Errorf("pidfd_open %d: %w", p.Pid, err)
	}
	defer unix.Close(fd)
	now, err := r.Stat(p.Pid)
	if err != nil {
		return err
	}
	if now.StartTicks != p.StartTicks {
		return ErrNoProcess
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return ErrNoProcess
		}
		return fmt.Errorf("pidfd_send_signal %d: %w", p.Pid, err)
	}
	return nil
}

// Cmdline returns the command line of pid for diagnostics, NUL separators turned
// into spaces and capped; it is best effort ("" when unreadable).
func Cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	for i := range b {
		if b[i] == 0 {
			b[i] = ' '
		}
	}
	if len(b) > 200 {
		b = append(b[:200], "..."...)
	}
	return string(b)
}

// WaitExited waits until every process of procs has exited (a zombie counts,
// as it does for Dead) or timeout passes, and reports whether they all did.
// It watches pidfds, which become readable when their thread group is gone:
// a teardown learns of an exit the moment it happens instead of at its next
// poll. A pid reused meanwhile names another process, which is then waited
// for until timeout: only the wait's length depends on it, never a signal.
func WaitExited(procs []Proc, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	fds := make([]unix.PollFd, 0, len(procs))
	defer func() {
		for _, p := range fds {
			_ = unix.Close(int(p.Fd))
		}
	}()
	for _, p := range procs {
		fd, err := unix.PidfdOpen(p.Pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // reaped already
		}
		if err != nil {
			return false, fmt.Errorf("pidfd_open %d: %w", p.Pid, err)
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	for len(fds) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		n, err := unix.Ppoll(fds, &ts, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return false, err
		}
		waiting := fds[:0]
		for _, p := range fds {
			if p.Revents != 0 {
				_ = unix.Close(int(p.Fd))
				continue
			}
			waiting = append(waiting, p)
		}
		fds = waiting
	}
	return true, nil
}
