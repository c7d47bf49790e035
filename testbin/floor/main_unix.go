//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/octostore-supervisor/supervisor/platform"
)

func main() {
	args := os.Args[1:]
	kill := len(args) > 0 && args[0] == "--kill"
	if kill {
		args = args[1:]
	}
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: floor [--kill] WORKER -- HOLD [ARGS...]")
		os.Exit(64)
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
		// Orphans of the worker's tree come to us, to be reaped below.
		if err := platform.BecomeSubreaper(); err != nil {
			fmt.Fprintf(os.Stderr, "floor: %v\n", err)
			os.Exit(70)
		}
	}
	worker := exec.Command(args[0])
	hold := exec.Command(args[2], args[3:]...)
	worker.Stdout, worker.Stderr, hold.Stderr = os.Stderr, os.Stderr, os.Stderr
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	hold.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	events, err := hold.StdoutPipe()
	if err == nil {
		err = hold.Start()
	}
	if err == nil {
		err = worker.Start()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(70)
	}
	sc := bufio.NewScanner(events)
	for sc.Scan() && !bytes.Contains(sc.Bytes(), []byte(`"lost"`)) {
	}
	_ = syscall.Kill(-worker.Process.Pid, sig)
	// SIGTERM even with --kill: the hold stamps an event after writing its
	// line, and a SIGKILL in between would lose the stamp the bench reads.
	_ = syscall.Kill(-hold.Process.Pid, syscall.SIGTERM)
	_ = worker.Wait()
	_ = hold.Wait()
	for kill {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err == syscall.ECHILD {
			break
		}
	}
}
