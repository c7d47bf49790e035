package proctest

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Sweep kills every live descendant of the test process with SIGKILL (each one
// through platform.ProcReader.Signal, after the start time it was just seen
// with is checked again under a pidfd) and reaps the zombies orphaned to us,
// until a scan of /proc finds nothing below us alive and no zombie left that a
// Prog's Wait still has to collect, or until timeout passes. It returns what
// was still alive then, and an error if /proc could not be scanned.
//
// Sweep kills everything below the test process, so tests that start processes
// and rely on it (through Main or Binary.Start) must not run in parallel, and
// must have no exec.Cmd of their own running: Sweep would reap its child.
func Sweep(timeout time.Duration) ([]platform.Proc, error) {
	r := platform.NewProcReader()
	self := os.Getpid()
	deadline := time.Now().Add(timeout)
	for {
		ps, err := r.Descendants(self, nil)
		var live []platform.Proc
		pending := false
		for _, p := range ps {
			if !p.Dead() {
				live = append(live, p)
				_ = r.Signal(p, syscall.SIGKILL)
				continue
			}
			if reapOrphan(p) {
				pending = true // its Prog's Wait will reap it
			}
		}
		if err == nil && len(live) == 0 && !pending {
			return nil, nil
		}
		if time.Now().After(deadline) {
			return live, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Describe formats processes for a failure message, one "pid=... comm=..."
// entry each.
func Describe(ps []platform.Proc) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "pid=%d ppid=%d pgrp=%d sid=%d state=%c threads=%d start=%d comm=%s", p.Pid, p.PPid, p.Pgid, p.Sid, p.State, p.Threads, p.StartTicks, p.Comm)
	}
	return b.String()
}
