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

// settle waits between two scans of a teardown: a short sleep, the scan of
// /proc being cheap and a TERM-obedient tree gone within milliseconds.
func (s *sweeper) settle(_ []platform.Proc, step time.Duration, _ time.Time) { time.Sleep(step) }

// provable: a scan below a subreaper sees every process the tree ever made.
func (s *sweeper) provable() bool { return true }

// runFamily: the supervisor is a subreaper, so the guardian's orphans are its
// own descendants.
func runFamily(string) *family { return nil }
