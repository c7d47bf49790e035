//go:build unix

package contain

import (
	"runtime"

	"github.com/octostore-supervisor/supervisor/platform"
)

// reservedThreads is how many OS threads each of our processes creates at start
// (platform.ReserveThreads). Measured, not guessed (docs/benchmarks.md,
// "What we tried, and what we kept"): without a reserve a helper reaches 7-9 threads in
// ordinary runs and up to 14-16 beside the escape matrix's fork storms, when
// every /proc read and kill is slow and the runtime hands off its Ps; with 12
// reserved each has 15-20, and none of 324 helpers counted over the same tests
// created one between a second after its reserve and its end.
// With 6 reserved (11 threads) and one more goroutine polling, a helper died
// in newosproc in 2 of 15 runs of TestHole7PidExhaustion.
const reservedThreads = 12

// ownProcs is the most Ps any process of ours runs with: the supervisor caps
// itself at it (reserveThreads), the thread reserve is sized for it.
const ownProcs = 2

// helperProcs is the GOMAXPROCS of every helper (the guardian, the shims, the
// embedded hold's root) and of a supervisor continued in the lean image, given
// in its environment so that the runtime starts with it: set later, the
// second P and its cache of partly used heap spans already exist. That cache
// is about 0.2-0.3 MB of every process, and none of them has work for two Ps
// at once: interleaved against two Ps, the gate, teardown and the tree and
// fork-storm rows did not grow (docs/benchmarks.md,
// "What we tried, and what we kept").
const helperProcs = 1

// reserveThreads caps GOMAXPROCS at ownProcs, then reserves the threads. The
// reserve is sized for ownProcs: with the host's GOMAXPROCS the GC alone runs
// a quarter of the Ps at once, and on a many-core host it would start threads
// after the reserve, each a clone that fails, aborting the process, once a
// same-user worker has used up RLIMIT_NPROC. None of our processes has work
// for more than two Ps.
func reserveThreads() {
	runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), ownProcs))
	platform.ReserveThreads(reservedThreads)
}
