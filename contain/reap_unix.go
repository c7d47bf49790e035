//go:build unix

package contain

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// reaper reaps every child of this process (direct ones and re-parented orphans)
// whenever SIGCHLD arrives and hands each status to watch. Each wait4 and its watch
// call run under lock, so code that signals a child by pid under the same lock
// knows the pid is still unreaped and cannot have been recycled. Nothing else in
// the process may call wait. Where the kernel has no pidfd and no cgroup (macOS)
// a child that leads a group or session with live members is kept as a zombie
// until they are gone (newChildReaper, leaderReaper).
func reaper(lock sync.Locker, watch func(pid int, ws unix.WaitStatus)) {
	reapWith(lock, watch, newChildReaper())
}

// reapAny is the shim's reaper: its only child is its group's program, whose
// exit is reported when it happens, even if the program made itself a leader.
func reapAny(lock sync.Locker, watch func(pid int, ws unix.WaitStatus)) {
	reapWith(lock, watch, anyChild{})
}

func reapWith(lock sync.Locker, watch func(pid int, ws unix.WaitStatus), cr childReaper) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	reapOne := func() bool {
		lock.Lock()
		defer lock.Unlock()
		var ws unix.WaitStatus
		pid, err := cr.next(&ws)
		if pid <= 0 || err != nil {
			return false
		}
		watch(pid, ws)
		return true
	}
	reap := func() {
		for reapOne() {
		}
	}
	go func() {
		reap() // children that died before Notify took effect
		for {
			select {
			case <-ch:
			case <-cr.retry(): // a kept leader's group may have emptied
			}
			reap()
		}
	}()
}

// exitCodeOf maps a wait status to the shell convention (128+signal when killed).
func exitCodeOf(ws unix.WaitStatus) (code, sig int) {
	if ws.Signaled() {
		return 128 + int(ws.Signal()), int(ws.Signal())
	}
	return ws.ExitStatus(), 0
}

// childReaper decides which exited child the reaper collects next.
type childReaper interface {
	// next reaps one exited child and returns its pid, or 0 when none may be
	// reaped now.
	next(ws *unix.WaitStatus) (int, error)
	// retry is non-nil while an exited child is being kept, so the reaper
	// looks again without waiting for another SIGCHLD.
	retry() <-chan time.Time
}

// anyChild reaps every exited child at once, orphans re-parented to a
// subreaper included.
type anyChild struct{}

func (anyChild) next(ws *unix.WaitStatus) (int, error) {
	return unix.Wait4(-1, ws, unix.WNOHANG, nil)
}

func (anyChild) retry() <-chan time.Time { return nil }

// leaderReaper reaps exited children like anyChild, except one whose pid is
// still the id of a process group or session with a live member: that child
// stays a zombie until its group and session are empty. While we hold its pid,
// the id cannot be handed to a new process, so a group we signal by its id,
// or whose members we count as ours, is ours. This is what makes a group
// leader a safe handle where there is no pidfd and no cgroup (macOS).
type leaderReaper struct {
	r    *platform.ProcReader
	buf  []platform.Proc
	held bool
}

// keepInterval is how often kept leaders are looked at again: their group
// empties without any SIGCHLD reaching us (its members are not our children).
const keepInterval = 20 * time.Millisecond

func newLeaderReaper() *leaderReaper { return &leaderReaper{r: platform.NewProcReader()} }

func (k *leaderReaper) next(ws *unix.WaitStatus) (int, error) {
	all, err := k.r.All(k.buf[:0])
	k.buf = all
	if err != nil {
		// Without the table nothing tells a leader from the rest: keep them
		// all and look again.
		k.held = true
		return 0, err
	}
	self := os.Getpid()
	k.held = false
	for _, c := range all {
		if c.PPid != self || !c.Dead() {
			continue
		}
		if leadsLiveMembers(c.Pid, all) {
			k.held = true
			continue
		}
		pid, err := unix.Wait4(c.Pid, ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.ECHILD) {
			continue // reaped elsewhere meanwhile (a Wait of the process that started it)
		}
		if pid > 0 || err != nil {
			return pid, err
		}
	}
	return 0, nil
}

func (k *leaderReaper) retry() <-chan time.Time {
	if k.held {
		return time.After(keepInterval)
	}
	return nil
}

// leadsLiveMembers reports whether a process that can still run is in the
// process group or the session whose id is pid.
func leadsLiveMembers(pid int, all []platform.Proc) bool {
	for _, p := range all {
		if p.Pid != pid && !p.Dead() && (p.Pgid == pid || p.Sid == pid) {
			return true
		}
	}
	return false
}
