package contain

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// parentChainLimit is the macOS backend's honest limit, printed by doctor and
// carried in every containment report.
const parentChainLimit = "macOS has no child subreaper: a process that leaves the process group, " +
	"its session and the parent chain before a scan sees it (a double fork with setsid) cannot be followed; " +
	"proven_empty covers the group and every process tracked in it"

// Tracking and teardown pacing. A scan reads the whole process table (one
// sysctl), so it is not repeated more often than trackSpacing however fast the
// members fork; kqueue wakes tracking at each fork or exit, trackInterval only
// bounds the wait when nothing happens. settleCap bounds a teardown's wait for
// a fork that raced the kqueue registration.
const (
	trackInterval = 250 * time.Millisecond
	trackSpacing  = 10 * time.Millisecond
	settleCap     = 50 * time.Millisecond
)

// newChildReaper keeps a zombie child that leads a group or session with live
// members (the guardian and the shims are started as leaders): without pidfds,
// a leader we have not reaped is what keeps a group id from being recycled.
func newChildReaper() childReaper { return newLeaderReaper() }

// trackFamily starts following the group of the shim pid from its birth on:
// the guardian calls it under the reaper's lock, while pid is its unreaped
// child. The family also signals the shim's process group through that lock:
// a live shim absorbs TERM, INT and HUP, so those go to the whole group at
// once; once the shim is dead (a zombie we keep until its group is empty) any
// signal may. It returns nil, so that no teardown can claim a proof, if the
// shim cannot even be read.
func trackFamily(pid int, lock sync.Locker, gone <-chan struct{}) *family {
	r := platform.NewProcReader()
	root, err := r.Stat(pid)
	if err != nil {
		return nil
	}
	f := newFamily(root, r.All)
	f.group = func(sig syscall.Signal) int {
		lock.Lock()
		defer lock.Unlock()
		select {
		case <-gone:
			return 0 // reaped: the id may name someone else's group by now
		default:
		}
		p, err := r.Stat(pid)
		if err != nil || p.StartTicks != root.StartTicks || (!p.Dead() && !leaderAbsorbs(sig)) {
			return 0
		}
		if unix.Kill(-pid, sig) != nil {
			return 0
		}
		return pid
	}
	go f.track()
	return f
}

// track scans the table whenever a member forks or exits (kqueue), and at
// least every trackInterval, so that a child is recorded while it is still
// tied to the group: once recorded it stays followed wherever it goes. It ends
// when the shim has been reaped and no member is left.
func (f *family) track() {
	w, err := platform.NewProcWatch()
	if err == nil {
		defer w.Close()
	}
	watched := map[int]uint64{}
	for {
		began := time.Now()
		members, err := f.scan(nil)
		if err == nil {
			if !f.rootPresent() && !anyAlive(members) {
				return
			}
			if w != nil {
				watched = f.watch(w, watched, members)
			}
		}
		if w == nil || err != nil {
			time.Sleep(trackInterval)
		} else if _, err := w.Wait(trackInterval); err != nil {
			time.Sleep(trackInterval)
		}
		if d := trackSpacing - time.Since(began); d > 0 {
			time.Sleep(d)
		}
	}
}

// watch registers the root and every member not watched yet; it returns the
// pids now watched with the start times they were registered for.
func (f *family) watch(w *platform.ProcWatch, watched map[int]uint64, members []platform.Proc) map[int]uint64 {
	now := make(map[int]uint64, len(members)+1)
	for _, p := range append(members, f.root) {
		if p.Dead() {
			continue
		}
		if start, ok := watched[p.Pid]; ok && start == p.StartTicks {
			now[p.Pid] = start
			continue
		}
		if err := w.Add(p.Pid); err == nil {
			now[p.Pid] = p.StartTicks
		}
	}
	return now
}

func (f *family) rootPresent() bool {
	p, err := platform.NewProcReader().Stat(f.root.Pid)
	return err == nil && p.StartTicks == f.root.StartTicks
}

func anyAlive(ps []platform.Proc) bool {
	for _, p := range ps {
		if !p.Dead() {
			return true
		}
	}
	return false
}

// ownFamily is the shim's own group, for the teardown it runs itself when the
// guardian is gone. It has no history (the guardian tracked it) and no group
// signal: a group STOP or KILL would stop or kill the shim itself.
func ownFamily() *family {
	r := platform.NewProcReader()
	self, err := r.Stat(os.Getpid())
	if err != nil {
		return nil
	}
	return newFamily(self, r.All)
}

// settle waits between two scans of a teardown until a live member exits or
// forks (kqueue), until, or settleCap, whichever comes first.
func (s *sweeper) settle(live []platform.Proc, _ time.Duration, until time.Time) {
	wait := min(time.Until(until), settleCap)
	if wait <= 0 || len(live) == 0 {
		return
	}
	w, err := platform.NewProcWatch()
	if err != nil {
		time.Sleep(min(wait, time.Millisecond))
		return
	}
	defer w.Close()
	for _, p := range live {
		if err := w.Add(p.Pid); errors.Is(err, platform.ErrNoProcess) {
			return // already gone: look again now
		} else if err != nil {
			time.Sleep(min(wait, time.Millisecond))
			return
		}
	}
	_, _ = w.Wait(wait)
}

// provable: only a sweep that follows the group's family proves anything here;
// a bare walk of parent links misses every orphan that went to launchd.
func (s *sweeper) provable() bool { return s.family != nil }

// runFamily follows the session of the guardian the run name identifies.
func runFamily(name string) *family {
	g, ok := guardianOf(name)
	if !ok {
		return nil
	}
	return newFamily(g, platform.NewProcReader().All)
}
