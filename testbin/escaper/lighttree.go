//go:build linux || darwin

package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// lightModes says --light-tree exists: it needs fork/exec and, for its
// pidfile lines, another process's start time (platform.ProcReader).
const lightModes = true

// lightSleep is what every light process runs.
var lightSleep = []string{"/bin/sleep", "3600"}

// startLight starts n children of the worker that run /bin/sleep directly
// (fork and exec, no Go runtime in them), one right after the other, and
// appends "PID START light" for each to pidfile (if set) as soon as it
// runs: START is read the way every escaper reads its own, through
// platform.ProcReader, and the pid cannot be recycled in between because
// nobody has reaped the child yet.
//
// The children inherit the worker's signal dispositions through fork and
// keep them across exec, except for signals the worker's Go runtime
// handles, which the child resets to the default before exec. So after
// --ignore-signals (SIG_IGN in the worker) every sleep ignores
// SIGTERM/SIGINT/SIGHUP from its first instruction, and otherwise it has
// the default ones.
func startLight(n int, pidfile string) error {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	var pf *os.File
	if pidfile != "" {
		if pf, err = os.OpenFile(pidfile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			return err
		}
		defer pf.Close()
	}
	fd := null.Fd()
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{fd, fd, fd}}
	argv := []string{"sleep", lightSleep[1]}
	r := platform.NewProcReader()
	pids := make([]int, 0, n)
	for i := range n {
		pid, err := syscall.ForkExec(lightSleep[0], argv, attr)
		if err != nil {
			return fmt.Errorf("started %d of %d: %w", i, n, err)
		}
		pids = append(pids, pid)
		if pf == nil {
			continue
		}
		p, err := r.Stat(pid)
		if err != nil {
			return fmt.Errorf("start time of %d: %w", pid, err)
		}
		// One O_APPEND write per line, as appendLine does.
		if _, err := fmt.Fprintf(pf, "%d %d light\n", pid, p.StartTicks); err != nil {
			return fmt.Errorf("pidfile: %w", err)
		}
	}
	go reapLight(pids)
	return nil
}

// reapLight collects the light children as they die. It waits for each by
// its own pid, never for any child: --zombies children must stay unreaped
// and every exec.Cmd reaps its own. Thousands of blocking waits would cost a
// thread each, so it polls them with WNOHANG after each SIGCHLD instead,
// pausing 10 ms so that a burst of deaths is collected in one pass.
func reapLight(pids []int) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		live := pids[:0]
		for _, pid := range pids {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR || (got == 0 && err == nil) {
				live = append(live, pid)
			}
		}
		if pids = live; len(pids) == 0 {
			return
		}
		<-ch
		time.Sleep(10 * time.Millisecond)
	}
}
