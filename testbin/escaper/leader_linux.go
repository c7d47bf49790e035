//go:build linux

package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// leaderModes says --leader-exit exists: a thread group whose leader is gone
// while its other threads run is a Linux notion (/proc shows the leader as a
// zombie); on macOS a process is a zombie only once its last thread is gone.
const leaderModes = true

// heartbeatEvery is how often the surviving thread rewrites its heartbeat.
const heartbeatEvery = 10 * time.Millisecond

// leaveLeaderThread ends the main thread - the thread-group leader, whose tid
// is the pid - with the raw exit syscall, while the heartbeat goroutine goes on
// on another thread. exit_group (os.Exit, returning from main) would end every
// thread; SYS_EXIT ends only the caller, as pthread_exit in main does in C.
// The main goroutine was locked to the main thread in init, before main ran.
func leaveLeaderThread(heartbeat string) {
	if tid := unix.Gettid(); tid != os.Getpid() {
		die("leader-exit: the main goroutine runs on thread %d, not the leader %d", tid, os.Getpid())
	}
	go beat(heartbeat)
	for {
		unix.RawSyscall(unix.SYS_EXIT, 0, 0, 0)
	}
}

// beat rewrites path with "N STATE THREADS" every heartbeatEvery once /proc
// shows the leader gone (state Z) with threads still running, so the file's
// existence means the escape is set up and a changing N that it still runs.
func beat(path string) {
	r := platform.NewProcReader()
	pid := os.Getpid()
	for n := 1; ; {
		if p, err := r.Stat(pid); err == nil && p.State == 'Z' {
			if err := writeFileAtomic(path, fmt.Appendf(nil, "%d %c %d\n", n, p.State, p.Threads)); err != nil {
				die("leader-exit: heartbeat: %v", err)
			}
			n++
		}
		time.Sleep(heartbeatEvery)
	}
}
