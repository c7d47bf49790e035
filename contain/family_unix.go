//go:build unix

package contain

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/octostore-supervisor/supervisor/platform"
)

// family is the set of processes that belong to one protected group where the
// kernel offers neither a container nor a child subreaper (macOS). There an
// orphan re-parents to launchd and drops out of our parent chain, so a group is
// followed by everything that can still tie a process to it:
//
//   - parent links from the root (the group's shim) and from every member;
//   - the process group and the session whose id is the pid of the root or of
//     a member that is still present with the start time we recorded. Only the
//     process holding a pid can found a group or session with that id, and no
//     pid is handed out while a group or session of that id exists, so such an
//     id cannot name a stranger's group;
//   - every process ever seen as a member, by pid and start time (tracking): an
//     orphan stays followed after it left the chain, group and session, as long
//     as it was seen before it left.
//
// What it cannot follow is a process that left the group, the session and the
// parent chain before any scan saw it (a double fork with setsid between two
// scans). That is the backend's stated limit (parentChainLimit), and why a
// teardown's proof on macOS covers the group and its tracked members only.
type family struct {
	mu    sync.Mutex
	root  platform.Proc
	known map[int]platform.Proc // pid -> the identity it was first seen with
	snap  func(dst []platform.Proc) ([]platform.Proc, error)
	buf   []platform.Proc

	// group, when set, signals the root's whole process group at once and
	// returns its id, or returns 0 when that cannot be done safely right now.
	// Only the root's parent can offer it: it must know the root is unreaped,
	// or the group id could have been recycled.
	group func(sig syscall.Signal) int
}

// newFamily follows the processes of root's group. snap reads the whole
// process table (platform.ProcReader.All).
func newFamily(root platform.Proc, snap func([]platform.Proc) ([]platform.Proc, error)) *family {
	return &family{root: root, known: map[int]platform.Proc{}, snap: snap}
}

// scan reads the process table and returns the family's members in it (zombies
// included), never the root, this process or the skipped pids.
func (f *family) scan(skip []int) ([]platform.Proc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	all, err := f.snap(f.buf[:0])
	f.buf = all
	if err != nil {
		return nil, err
	}
	return f.observe(all, skip), nil
}

// observe folds one snapshot of the process table into the family and returns
// the members present in it. Call with f.mu held.
func (f *family) observe(all []platform.Proc, skip []int) []platform.Proc {
	self := os.Getpid()
	at := make(map[int]int, len(all))
	var children, byGroup, bySession map[int][]int = map[int][]int{}, map[int][]int{}, map[int][]int{}
	for i, p := range all {
		at[p.Pid] = i
		children[p.PPid] = append(children[p.PPid], i)
		if p.Pgid > 0 {
			byGroup[p.Pgid] = append(byGroup[p.Pgid], i)
		}
		if p.Sid > 0 {
			bySession[p.Sid] = append(bySession[p.Sid], i)
		}
	}
	// present reports whether id still names the process it was recorded as.
	present := func(id platform.Proc) bool {
		i, ok := at[id.Pid]
		return ok && all[i].StartTicks == id.StartTicks
	}

	in := map[int]bool{}
	var queue []int // pids whose links are still to be followed
	visit := func(p platform.Proc) {
		if in[p.Pid] || p.Pid <= 1 || p.Pid == self || p.Pid == f.root.Pid || slices.Contains(skip, p.Pid) {
			return
		}
		in[p.Pid] = true
		queue = append(queue, p.Pid)
	}
	if present(f.root) {
		queue = append(queue, f.root.Pid)
	}
	for pid, id := range f.known {
		if !present(id) {
			delete(f.known, pid) // gone, or its pid now names someone else
			continue
		}
		visit(all[at[pid]])
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, i := range children[pid] {
			visit(all[i])
		}
		for _, i := range byGroup[pid] {
			visit(all[i])
		}
		for _, i := range bySession[pid] {
			visit(all[i])
		}
	}

	members := make([]platform.Proc, 0, len(in))
	for pid := range in {
		p := all[at[pid]]
		if _, ok := f.known[pid]; !ok {
			f.known[pid] = p
		}
		members = append(members, p)
	}
	return members
}

// join appends to dst the family's members that are not in it yet.
func (f *family) join(dst []platform.Proc, skip []int) ([]platform.Proc, error) {
	members, err := f.scan(skip)
	if err != nil {
		return dst, err
	}
	have := make(map[int]bool, len(dst))
	for _, p := range dst {
		have[p.Pid] = true
	}
	for _, m := range members {
		if !have[m.Pid] {
			dst = append(dst, m)
		}
	}
	return dst, nil
}

// signalGroup signals the root's process group at once when the family's
// owner can do so safely, and returns the group id it signalled (0 if none).
// It is safe on a nil family, which has no group.
func (f *family) signalGroup(sig syscall.Signal) int {
	if f == nil || f.group == nil {
		return 0
	}
	return f.group(sig)
}

// leaderAbsorbs reports whether a shim survives sig sent to its own process
// group: it handles these (absorbSignals) and keeps running.
func leaderAbsorbs(sig syscall.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGINT || sig == syscall.SIGHUP
}

// followRun makes a supervisor's own teardown (its guardian is gone) follow
// the guardian's session, named by the run: on macOS the guardian's orphans -
// the shims and everything below them - re-parent to launchd, not to us, and
// only their session still ties them to this run. The guardian's zombie is
// kept until its session is empty (leaderReaper), so the session id cannot
// have been recycled while it is followed. Where a subreaper keeps the tree in
// view (Linux) there is nothing to add.
func (s *sweeper) followRun(name string) {
	if f := runFamily(name); f != nil {
		s.family = f
	}
}

// guardianOf reads the guardian's identity back from a run name (runName).
func guardianOf(name string) (platform.Proc, bool) {
	var sup, guardian platform.Proc
	n, err := fmt.Sscanf(name, runPrefix+"%d.%d-%d.%d", &sup.Pid, &sup.StartTicks, &guardian.Pid, &guardian.StartTicks)
	if err != nil || n != 4 || guardian.Pid <= 1 || runName(sup, guardian) != name {
		return platform.Proc{}, false
	}
	// startHelper starts the guardian with setsid: it leads both.
	guardian.Pgid, guardian.Sid = guardian.Pid, guardian.Pid
	return guardian, true
}
