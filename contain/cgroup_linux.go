package contain

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// parseRunName returns the two owners a run directory names.
func parseRunName(name string) (sup, guardian platform.Proc, ok bool) {
	rest, found := strings.CutPrefix(name, runPrefix)
	if !found {
		return sup, guardian, false
	}
	a, b, found := strings.Cut(rest, "-")
	if !found {
		return sup, guardian, false
	}
	parse := func(s string) (platform.Proc, bool) {
		p, st, found := strings.Cut(s, ".")
		pid, err1 := strconv.Atoi(p)
		start, err2 := strconv.ParseUint(st, 10, 64)
		return platform.Proc{Pid: pid, StartTicks: start}, found && err1 == nil && err2 == nil && pid > 0
	}
	sup, ok1 := parse(a)
	guardian, ok2 := parse(b)
	return sup, guardian, ok1 && ok2
}

// leaf is one group's cgroup.
type leaf struct {
	dir string
}

// cgroupRun is the guardian's handle on a run's cgroups.
type cgroupRun struct {
	dir    string
	leaves map[string]*leaf
	// markErr says why the run directory could not be marked (markRun): a
	// run that goes on unmarked is one no sweep will ever kill or remove.
	markErr error
}

// createRun makes the run directory, marks it as a supervisor's (markRun) and
// makes one leaf per group; the worker's leaf gets pids.max when the pids
// controller is available, so a fork storm is bounded by the kernel and cannot
// starve the host or us, and the memory and CPU limits asked for (leafLimits).
// A mark the kernel refuses does not fail the run: it is kept in markErr for
// the guardian to say, and the run is only left to no sweep (see markRun).
func createRun(b Backend, name string, groups []string) (*cgroupRun, error) {
	if _, _, ok := parseRunName(name); !ok || filepath.Base(name) != name {
		return nil, fmt.Errorf("refusing to create cgroup %q: not a run directory name", name)
	}
	dir := filepath.Join(b.Parent, name)
	if err := platform.MakeCgroup(b.Top, dir, 0); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	r := &cgroupRun{dir: dir, leaves: map[string]*leaf{}, markErr: markRun(dir, name)}
	for _, g := range groups {
		pidsMax := 0
		if g == groupWorker {
			pidsMax = b.PidMax
		}
		l := &leaf{dir: filepath.Join(dir, g)}
		if err := platform.MakeCgroup(b.Top, l.dir, pidsMax); err != nil {
			r.remove(io.Discard)
			return nil, fmt.Errorf("create cgroup %s: %w", l.dir, err)
		}
		r.leaves[g] = l
		if g != groupWorker {
			continue
		}
		if err := platform.SetCgroupLimits(b.Top, l.dir, leafLimits(b)); err != nil {
			r.remove(io.Discard)
			return nil, fmt.Errorf("limit cgroup %s: %w", l.dir, err)
		}
	}
	return r, nil
}

// open returns a descriptor of the leaf directory for clone3(CLONE_INTO_CGROUP).
func (l *leaf) open() (*os.File, error) {
	fd, err := unix.Open(l.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", l.dir, err)
	}
	return os.NewFile(uintptr(fd), l.dir), nil
}

// members lists the pids in the leaf.
func (l *leaf) members() []int {
	procs, _ := platform.CgroupProcs(l.dir)
	return procs
}

// killAndWait kills every process in the leaf (see killCgroup) and waits until
// the kernel reports it unpopulated. It returns the pids the leaf held.
func (l *leaf) killAndWait(proof time.Duration) ([]int, bool, error) {
	// A leaf the kernel shows unpopulated - the usual case, the walk having
	// seen every member exit - is not listed: that would read its directory
	// on the path to the terminal line.
	if populated, err := platform.CgroupPopulated(l.dir); err != nil || !populated {
		return nil, err == nil, err
	}
	pids := l.members()
	empty, err := killPopulated(l.dir, proof)
	return pids, empty, err
}

// firstStragglerLook is how long killCgroup lets cgroup.kill work before it
// looks for processes that survived it; the wait doubles after each look.
const firstStragglerLook = 20 * time.Millisecond

// killCgroup kills every process in dir and below at once (cgroup.kill; where
// the kernel lacks it, freeze, kill each and thaw), then waits until
// the kernel reports dir unpopulated, within proof. Whatever cgroup.kill leaves
// behind is killed one by one while it waits.
//
// cgroup.kill does leave some. The kernel (__cgroup_kill, 6.18) walks the
// listed processes and sends each a thread-directed SIGKILL (send_sig) to its
// leader task alone, skipping a task that already has one pending. A leader
// that has exited - the raw exit syscall, or pthread_exit in main, while other
// threads run on - is an exiting task: the signal is queued on it, never
// passed on to a live thread of its group, and every later cgroup.kill skips
// it as already dying. cgroup.procs keeps listing such a leader while any of
// its threads lives, and a SIGKILL through its pidfd is group-wide like
// kill(2), so that is what ends it.
func killCgroup(dir string, proof time.Duration) (bool, error) {
	if populated, err := platform.CgroupPopulated(dir); err != nil || !populated {
		return err == nil, err
	}
	return killPopulated(dir, proof)
}

// killPopulated is killCgroup for a cgroup just seen populated. CPU limits
// in it are lifted first: a throttled process runs its SIGKILL only in its
// share of each period (platform.LiftCPULimits).
func killPopulated(dir string, proof time.Duration) (bool, error) {
	deadline := time.Now().Add(proof)
	platform.LiftCPULimits(dir)
	if err := platform.KillCgroup(dir); err != nil {
		return false, fmt.Errorf("kill %s: %w", dir, err)
	}
	for wait := firstStragglerLook; ; wait *= 2 {
		left := max(time.Until(deadline), 0)
		empty, err := platform.WaitCgroupEmpty(dir, min(wait, left))
		if err != nil || empty || left <= wait {
			return empty, err
		}
		if err := platform.KillCgroupMembers(dir); err != nil {
			return false, fmt.Errorf("kill what cgroup.kill left in %s: %w", dir, err)
		}
	}
}

// killRun kills a whole run (all its leaves: cgroup.kill is recursive) and waits
// for it to empty; the supervisor's fallback uses it when the guardian is gone.
func killRun(b Backend, name string, proof time.Duration) ([]int, bool, error) {
	// cgroup.kill is recursive: a wrong name here would kill other runs.
	if _, _, ok := parseRunName(name); !ok || filepath.Base(name) != name {
		return nil, false, fmt.Errorf("refusing to kill %q: not a run directory name", name)
	}
	dir := filepath.Join(b.Parent, name)
	l := &leaf{dir: dir}
	pids, empty, err := l.killAndWait(proof)
	if err != nil && runGone(dir, err) {
		// The guardian removes the run as it ends, so a fallback after a
		// guardian that died in its last moments finds none: an empty run.
		// The descendant sweep still runs beside this.
		return pids, true, nil
	}
	return pids, empty, err
}

// removeRun removes a run's leaves and directory once they are empty.
func removeRun(b Backend, name string, diag io.Writer) {
	if _, _, ok := parseRunName(name); !ok || filepath.Base(name) != name {
		return
	}
	dir := filepath.Join(b.Parent, name)
	subs, _ := os.ReadDir(dir)
	r := &cgroupRun{dir: dir, leaves: map[string]*leaf{}}
	for _, sub := range subs {
		if sub.IsDir() {
			r.leaves[sub.Name()] = &leaf{dir: filepath.Join(dir, sub.Name())}
		}
	}
	r.remove(diag)
}

// stats reads the group's CPU time and, where the memory controller is on, its
// peak memory, and the limit that ended it (limitStats), for run --json and
// for a run with limits. Missing controllers leave zeros.
func (l *leaf) stats(rep *Report) {
	if us, err := platform.CgroupCPUMicros(l.dir); err == nil {
		rep.CPUMicros = us
	}
	if b, err := os.ReadFile(filepath.Join(l.dir, "memory.peak")); err == nil {
		rep.MemoryPeakBytes, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	limitStats(l.dir, rep)
}

// removeDir removes the cgroup dir and every cgroup below it, deepest first.
// Below a run's leaves there may be cgroups a supervisor made that ran as the
// worker (its SupervisorLeaf, its own runs): left there, they kept the run's
// directories, and every later start-up sweep tried them again. A cgroup
// that still holds processes stays, and so does every one above it, so
// evidence is never destroyed.
func removeDir(dir string) error {
	subs, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, sub := range subs {
		if sub.IsDir() {
			errs = append(errs, removeDir(filepath.Join(dir, sub.Name())))
		}
	}
	return errors.Join(append(errs, rmdirCgroup(dir))...)
}

// rmdirCgroup removes an empty cgroup directory. Right after the last task
// exits the kernel may still answer EBUSY for a moment.
func rmdirCgroup(dir string) error {
	var err error
	for i := 0; i < 100; i++ {
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// remove deletes the run's cgroups (removeDir).
func (r *cgroupRun) remove(diag io.Writer) {
	if err := removeDir(r.dir); err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: %v\n", err)
	}
}

// runMarkXattr marks a run directory as made by a supervisor (createRun). A
// name alone proves nothing: the runs' parent is delegated to the runs' user,
// and a worker of that user made $parent/run-999999.1-999998.1/worker, moved
// another live run's worker into it, and the next start's sweep killed that
// worker as an abandoned run's. So a sweep kills and removes only a directory
// whose mark matches its own name and inode number (markedRun); the value
// binds the mark to that one directory, so a mark copied onto another
// directory, or left on a name made anew, does not match (kernfs does not
// reuse inode numbers within a boot, and cgroups do not outlive one).
//
// What the mark proves, and what not. A worker under the file rules
// (Landlock denies it every write to the cgroup filesystem, mkdir included)
// can neither make a cgroup nor move a process into one (a write of
// cgroup.procs), so it cannot stage a directory like the one above. Landlock
// governs no xattrs: such a worker could still mark a directory someone else
// made, and remove a mark, which only leaves a run to no sweep; what a sweep
// kills in a marked directory is still never something that worker put
// there. A process of the same user under no such restriction (a worker run
// with --no-worker-scope, or anything else its user starts) can make and
// mark a directory exactly as a supervisor does, as it can anything else its
// user can: against that the mark stops the accident - a directory named
// like a run by someone who did not mean it as one - not the attack.
const runMarkXattr = "user.octostore.run"

// runMark is the mark's value for the run directory name with inode ino,
// made by a supervisor in our PID namespace. A run's name holds its
// supervisor's and guardian's pids, which only a sweep in the same PID
// namespace can judge: seen from another (a container that shares the
// host's cgroups), every pid of the run looks gone, and a sweep there
// killed live runs. So the mark binds the namespace too, and a run made in
// another one is not ours to sweep. "" when ours cannot be read.
func runMark(name string, ino uint64) string {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%s ino %d pidns %d", name, ino, st.Ino)
}

// markRun marks dir, the run directory named name, as made by a supervisor
// (runMarkXattr). The inode is read and the mark set through one descriptor,
// so it is bound to the directory it is set on. An error (a kernel before
// 5.7 keeps no user xattrs on cgroupfs) does not fail the run, whose
// containment does not depend on it: the guardian says it, and the run is
// then one no sweep will touch, should its supervisor and guardian both die.
func markRun(dir, name string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("mark run %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("mark run %s: %w", dir, err)
	}
	mark := runMark(name, st.Ino)
	if mark == "" {
		return fmt.Errorf("mark run %s: our PID namespace cannot be read from /proc/self/ns/pid", dir)
	}
	if err := unix.Fsetxattr(fd, runMarkXattr, []byte(mark), 0); err != nil {
		return fmt.Errorf("mark run %s: set %s: %w", dir, runMarkXattr, err)
	}
	return nil
}

// markedRun reports whether dir carries a supervisor's mark (runMarkXattr)
// that names dir itself, its own name and inode number, and our PID
// namespace.
func markedRun(dir string) bool {
	ours, _ := runMarkOf(dir)
	return ours
}

// runMarkOf reads dir's mark: ours (markedRun), or elsewhere, a mark for dir
// itself made in another PID namespace.
func runMarkOf(dir string) (ours, elsewhere bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false, false
	}
	want := runMark(filepath.Base(dir), st.Ino)
	if want == "" {
		return false, false
	}
	buf := make([]byte, 256)
	n, err := unix.Fgetxattr(fd, runMarkXattr, buf)
	if err != nil {
		return false, false
	}
	got := string(buf[:n])
	dirPart, _, _ := strings.Cut(want, " pidns ")
	other, ns, ok := strings.Cut(got, " pidns ")
	ours = got == want
	return ours, !ours && ok && other == dirPart && ns != ""
}

// unprovenXattr marks a run directory a start-up sweep could not prove empty
// within its short bound (a task stuck in uninterruptible sleep, or one the
// kill cannot reach). Later start-up sweeps then only look whether it has
// emptied since, instead of killing and waiting again at every start. The
// value is when it was marked. cgroupfs keeps user xattrs since Linux 5.7.
const unprovenXattr = "user.octostore.unproven"

func sweepRuns(b Backend, mode sweepMode, proof time.Duration) ([]StaleRun, error) {
	if b.Name != BackendCgroup {
		return nil, nil
	}
	entries, err := os.ReadDir(b.Parent)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", b.Parent, err)
	}
	pr := platform.NewProcReader()
	alive := func(p platform.Proc) bool {
		st, err := pr.Stat(p.Pid)
		return err == nil && st.StartTicks == p.StartTicks && !st.Dead()
	}
	var out []StaleRun
	for _, e := range entries {
		sup, g, ok := parseRunName(e.Name())
		if !e.IsDir() || !ok || alive(sup) || alive(g) {
			continue
		}
		s, found, err := sweepRun(b, filepath.Join(b.Parent, e.Name()), mode, proof)
		if found {
			out = append(out, s)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sweepRun sweeps one abandoned run; found is false when it vanished meanwhile
// (another sweep - every supervisor sweeps at start - got there first), and
// at start-up for a run marked unprovable earlier that still holds processes.
// A directory named like a run that no supervisor marked (markedRun) is
// only looked at, in every mode, and reported NotOurs.
func sweepRun(b Backend, dir string, mode sweepMode, proof time.Duration) (s StaleRun, found bool, err error) {
	gone := func(err error) bool { return runGone(dir, err) }
	procs, err := platform.CgroupProcs(dir)
	if err != nil {
		return s, false, ignoreIf(gone(err), err)
	}
	ours, elsewhere := runMarkOf(dir)
	s = StaleRun{Dir: dir, Processes: len(procs), NotOurs: !ours, OtherPIDNamespace: elsewhere}
	if !s.NotOurs {
		s.UnprovenSince = markedUnproven(dir)
	}
	if s.NotOurs || mode == sweepList || (mode == sweepStartup && s.UnprovenSince != "") {
		// Only look: populated (recursive) is the kernel's own proof, the same
		// the sweep waits for.
		populated, err := platform.CgroupPopulated(dir)
		if err != nil {
			return s, !gone(err), ignoreIf(gone(err), err)
		}
		s.ProvenEmpty = !populated
		switch {
		case s.NotOurs, mode == sweepList:
			return s, true, nil
		case populated:
			return s, false, nil // said when it was marked; left to `sweep`
		}
		return removeSwept(dir, s), true, nil
	}
	if s.ProvenEmpty, err = killCgroup(dir, proof); err != nil {
		return s, !gone(err), ignoreIf(gone(err), err) // removed by a concurrent sweep once it was empty
	}
	if s.ProvenEmpty {
		return removeSwept(dir, s), true, nil
	}
	if mode == sweepStartup {
		s.UnprovenSince = time.Now().UTC().Format(time.RFC3339)
		if err := unix.Setxattr(dir, unprovenXattr, []byte(s.UnprovenSince), 0); err != nil {
			s.UnprovenSince = ""
			s.MarkErr = fmt.Sprintf("set %s on %s: %v", unprovenXattr, dir, err)
		}
	}
	return s, true, nil
}

// runGone reports whether err, from reading the run directory dir or a leaf
// of it, means the run was removed. Its remover (a concurrent sweep, or the
// guardian as it ends) removes the leaves, then the run, and the kernel
// removes a cgroup only when no process is in it or below it, so a run gone
// is a run empty. Reading a leaf that is being removed fails with ENODEV
// rather than ENOENT.
func runGone(dir string, err error) bool {
	_, serr := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV) || errors.Is(serr, os.ErrNotExist)
}

func ignoreIf(cond bool, err error) error {
	if cond {
		return nil
	}
	return err
}

// removeSwept removes an abandoned run proven empty: its leaves, then itself.
func removeSwept(dir string, s StaleRun) StaleRun {
	s.Removed = removeDir(dir) == nil
	return s
}

// markedUnproven returns when a start-up sweep marked dir unprovable, or "".
func markedUnproven(dir string) string {
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, unprovenXattr, buf)
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}
