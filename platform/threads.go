package platform

import (
	"runtime"
	"sync"
)

// ReserveThreads makes the Go runtime create n OS threads now and keep them idle.
// The runtime starts a thread whenever a goroutine blocks in a syscall or the GC
// needs a worker, and it aborts the whole process if clone fails. A worker that
// exhausts the pids it shares with us (its cgroup, or RLIMIT_NPROC of the same
// user) would then crash the supervisor in the middle of teardown. Idle threads
// are reused rather than created, so reserving them up front removes clone from
// everything that follows.
func ReserveThreads(n int) {
	var locked, release sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	for i := 0; i < n; i++ {
		go func() {
			// A locked goroutine owns its thread alone, so n of them at once force
			// n threads into existence; unlocking before returning hands each
			// thread back to the runtime's idle list instead of destroying it.
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	release.Done()
}
