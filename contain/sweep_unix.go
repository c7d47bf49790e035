//go:build unix

package contain

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// sweeper tears down every descendant of one root process. The root is a shim (or
// the guardian, or the supervisor in a fallback) that is a child subreaper: an
// orphan anywhere below it - a double-forked daemon, a setsid escaper - re-parents
// to it instead of PID 1, so walking parent links from the root finds the whole
// tree, whatever sessions or process groups its members moved to.
//
// It never forks or execs, so a worker that exhausts pids cannot make teardown fail
// open, and it signals only through platform.ProcReader.Signal, which cannot reach a
// recycled pid.
type sweeper struct {
	r    *platform.ProcReader
	buf  []platform.Proc
	seen map[int]struct{} // pids this teardown ended, for the report
	// termed are the processes that got their SIGTERM: each gets one, so a
	// worker cleaning up in its TERM handler is not interrupted again and
	// again during the grace period.
	termed map[procKey]struct{}

	// container, when set, is the group's kernel container (a cgroup leaf): it
	// kills every member at once and reports the pids it held and whether the
	// kernel then showed it empty within the bound. The descendant sweep still
	// runs after it, for anything that left the container (a root worker can
	// move itself to another cgroup) but not our parent chain.
	container func(proof time.Duration) (pids []int, empty bool, err error)
	members   func() []int // the container's current members, to name survivors
	backend   string

	// family, on macOS, is the group followed beyond parent links (its process
	// group, sessions and every member seen so far); nil where a subreaper or a
	// container keeps the whole tree in view.
	family *family
}

func newSweeper() *sweeper {
	return &sweeper{r: platform.NewProcReader(), seen: make(map[int]struct{}), backend: BackendProcessGroup}
}

// alive returns the descendants of root that can still run (zombies excluded).
func (s *sweeper) alive(root int, skip []int) ([]platform.Proc, error) {
	var err error
	s.buf, err = s.r.Descendants(root, s.buf[:0], skip...)
	if err != nil {
		return nil, err
	}
	if s.family != nil {
		if s.buf, err = s.family.join(s.buf, skip); err != nil {
			return nil, err
		}
	}
	live := s.buf[:0]
	for _, p := range s.buf {
		if !p.Dead() {
			live = append(live, p)
		}
	}
	return live, nil
}

func (s *sweeper) signalAll(procs []platform.Proc, sig syscall.Signal) error {
	var firstErr error
	group := s.family.signalGroup(sig) // macOS: the whole group at once, when safe
	for _, p := range procs {
		s.seen[p.Pid] = struct{}{}
		if group != 0 && p.Pgid == group {
			continue // the group signal reached it; a second one could read as "force quit"
		}
		if err := s.r.Signal(p, sig); err != nil && !errors.Is(err, platform.ErrNoProcess) && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// procKey names one process for its lifetime: a pid and its start time.
type procKey struct {
	pid   int
	start uint64
}

// terminateNew sends SIGTERM to the members of live that have not had one.
func (s *sweeper) terminateNew(live []platform.Proc) error {
	if s.termed == nil {
		s.termed = map[procKey]struct{}{}
	}
	fresh := live[:0:0]
	for _, p := range live {
		k := procKey{p.Pid, p.StartTicks}
		if _, done := s.termed[k]; !done {
			s.termed[k] = struct{}{}
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	return s.signalAll(fresh, syscall.SIGTERM)
}

// terminate ends the tree below root: SIGTERM to every member, wait until they are
// all gone or termUntil passes, then sweeps of SIGSTOP-everything-then-SIGKILL-
// everything until a scan finds no live member, then waits up to proofBound for
// the kernel to show nothing alive. Stopping before killing freezes a fork storm:
// a stopped process cannot fork, so each sweep shrinks the set it has to chase.
// Subtrees rooted at skip (a sibling group's healthy shim) are left alone.
func (s *sweeper) terminate(root int, skip []int, termUntil time.Time, proofBound time.Duration, diag io.Writer) (rep Report) {
	start := time.Now()
	rep.Backend, rep.Limit = s.backend, parentChainLimit
	defer func() {
		rep.Killed = len(s.seen)
		rep.DurationMs = time.Since(start).Milliseconds()
	}()

	live, err := s.termPhase(root, skip, termUntil)
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: scanning processes during teardown: %v\n", err)
	}
	// A scan that found nothing alive stays true: only a live member can add a
	// process to the tree (re-parenting keeps orphans inside it), so the proof
	// needs no second scan - unless the container held processes to kill.
	treeEmpty := err == nil && len(live) == 0
	proofUntil := time.Now().Add(proofBound)
	containerEmpty := true
	if s.container != nil {
		var held bool
		held, containerEmpty = s.killContainer(proofBound, diag)
		treeEmpty = treeEmpty && !held
	}
	live, proven := s.killPhase(root, skip, treeEmpty, containerEmpty, proofUntil, diag)
	if proven {
		rep.ProvenEmpty = s.provable()
		return rep
	}
	rep.Survivors = s.survivors(live, containerEmpty)
	return rep
}

// termPhase sends SIGTERM to the tree below root and waits for it to empty
// until termUntil, a TERM to each member once, those forked meanwhile
// included. It returns the members the last scan found alive, or the scan's
// error.
func (s *sweeper) termPhase(root int, skip []int, termUntil time.Time) ([]platform.Proc, error) {
	live, err := s.alive(root, skip)
	if err != nil || len(live) == 0 || !time.Now().Before(termUntil) {
		return live, err
	}
	err = s.terminateNew(live)
	// Poll quickly at first: a TERM-obedient worker is usually gone within a
	// few milliseconds and the terminal line is waiting on this proof.
	for step := time.Millisecond; err == nil && time.Now().Before(termUntil); step = min(step*2, 10*time.Millisecond) {
		if live, err = s.alive(root, skip); err != nil || len(live) == 0 {
			break
		}
		// Members forked after the first TERM get theirs too.
		_ = s.terminateNew(live)
		s.settle(live, min(step, time.Until(termUntil)), termUntil)
	}
	return live, err
}

// killContainer kills the kernel container at once and waits up to
// proofBound for it to show empty. It reports whether the container held
// processes (then the tree needs a fresh scan, whatever the TERM phase saw)
// and whether it was shown empty; the pids it held count as ended.
func (s *sweeper) killContainer(proofBound time.Duration, diag io.Writer) (held, empty bool) {
	pids, empty, err := s.container(proofBound)
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: killing the container: %v\n", err)
	}
	for _, pid := range pids {
		s.seen[pid] = struct{}{}
	}
	return len(pids) > 0, empty
}

// killPhase stops and kills every live member below root, scan after scan,
// until a scan finds none or proofUntil passes. treeEmpty trusts the TERM
// phase's empty scan for the first pass. It reports proven when a scan found
// the tree empty and the container was shown empty; otherwise it returns the
// members last seen alive (none when the last scan failed).
func (s *sweeper) killPhase(root int, skip []int, treeEmpty, containerEmpty bool, proofUntil time.Time, diag io.Writer) (live []platform.Proc, proven bool) {
	var err error
	for {
		if treeEmpty {
			treeEmpty = false // once: every later pass follows a kill
		} else {
			live, err = s.alive(root, skip)
		}
		if err != nil {
			fmt.Fprintf(diag, "octostore-supervisor: scanning processes during teardown: %v\n", err)
		} else if len(live) == 0 && containerEmpty {
			return nil, true
		} else if len(live) == 0 {
			return live, false // the container still reports members the tree walk cannot reach
		}
		if time.Now().After(proofUntil) {
			return live, false
		}
		if err == nil {
			_ = s.signalAll(live, syscall.SIGSTOP)
			// A member may have forked between the scan and its SIGSTOP; the next
			// scan finds the child, and the loop runs until a scan is empty.
			_ = s.signalAll(live, syscall.SIGKILL)
		}
		s.settle(live, time.Millisecond, proofUntil)
	}
}

// survivors names what teardown could not prove gone: the members last seen
// alive and, when the container was not shown empty, its members the tree
// walk did not reach.
func (s *sweeper) survivors(live []platform.Proc, containerEmpty bool) []Survivor {
	var out []Survivor
	named := map[int]bool{}
	for _, p := range live {
		named[p.Pid] = true
		out = append(out, survivorOf(p))
	}
	if !containerEmpty && s.members != nil {
		for _, pid := range s.members() {
			if p, err := s.r.Stat(pid); err == nil && !named[pid] {
				out = append(out, survivorOf(p))
			}
		}
	}
	return out
}

func survivorOf(p platform.Proc) Survivor {
	return Survivor{Pid: p.Pid, Start: p.StartTicks, State: string(p.State), Command: commandOf(p)}
}

func commandOf(p platform.Proc) string {
	if c := platform.Cmdline(p.Pid); c != "" {
		return c
	}
	return p.Comm
}
