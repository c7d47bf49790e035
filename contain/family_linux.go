package contain

import (
	"sync"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// parentChainLimit is what a proof cannot cover here: nothing. The shims,
// the guardian and the supervisor are child subreapers, so every orphan stays
// below them, and the cgroup backend adds a container a process cannot leave.
const parentChainLimit = ""

// newChildReaper: with pidfds every signal is safe without holding a leader's
// pid, so children are reaped as soon as they exit.
func newChildReaper() childReaper { return anyChild{} }

// trackFamily: Linux needs no tracking beyond parent links (see parentChainLimit).
func trackFamily(int, sync.Locker, <-chan struct{}) *family { return nil }

// ownFamily: a shim's orphans re-parent to the shim itself.
func ownFamily() *family { return nil }

// settleWatchMax is the most processes settle watches through pidfds; a
// larger tree is slept on, as opening a pidfd for each of thousands of
// processes between two scans would cost more than the scans it saves.
const settleWatchMax = 64

// settle waits between two scans of a teardown for at most step, and only
// until every process of live has exited: the exit of a TERM-obedient worker
// ends the wait as it happens, and the scan that proves the tree empty
// follows at once instead of at the next poll. A process forked meanwhile is
// not watched; the next scan, at most step later, finds it.
func (s *sweeper) settle(live []platform.Proc, step time.Duration, _ time.Time) {
	if len(live) == 0 || len(live) > settleWatchMax {
		time.Sleep(step)
		return
	}
	if _, err := platform.WaitExited(live, step); err != nil {
		time.Sleep(step) // no pidfd (descriptors exhausted): poll as before
	}
}

// provable: a scan below a subreaper sees every process the tree ever made.
func (s *sweeper) provable() bool { return true }

// runFamily: the supervisor is a subreaper, so the guardian's orphans are its
// own descendants.
func runFamily(string) *family { return nil }
