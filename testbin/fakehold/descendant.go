//go:build unix || windows

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

const descendantSupported = true

// startDescendant re-executes fakehold in the hidden descendant mode. The
// descendant stays in the hold's process group and session (Windows: console
// and process group): it is what a supervisor must kill along with the hold.
// Its stdio is the null device, so it never keeps the events pipe open.
func startDescendant(marker string, after time.Duration, pidfile string) error {
	exe, err := selfExe()
	if err != nil {
		return err
	}
	args := []string{descendantFlag, "--marker", marker, "--after", after.String()}
	if pidfile != "" {
		args = append(args, "--pidfile", pidfile)
	}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = os.Args[0]
	if err := cmd.Start(); err != nil {
		return err
	}
	// Reap it if it ever dies while the hold lives, so it does not linger
	// as a zombie that a liveness check would count as a survivor.
	go func() { _ = cmd.Wait() }()
	return nil
}

// runDescendant is the descendant itself: immune to graceful stops
// (becomeImmune), it records its identity, creates the marker after the delay
// (proof that it outlived the supervisor's deadline) and then lives on until
// it is killed.
func runDescendant(args []string) int {
	fs := flag.NewFlagSet("fakehold-descendant", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	marker := fs.String("marker", "", "")
	after := fs.Duration("after", 0, "")
	pidfile := fs.String("pidfile", "", "")
	if err := fs.Parse(args); err != nil || *marker == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "fakehold: bad internal descendant arguments")
		return exitUsage
	}
	if err := becomeImmune(); err != nil {
		return 70
	}
	// The pidfile line is written only after that, so a test that sees the
	// line knows the descendant is already immune.
	if *pidfile != "" {
		if err := appendPidLine(*pidfile); err != nil {
			return 70
		}
	}
	time.Sleep(*after)
	if f, err := os.OpenFile(*marker, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		_ = f.Close()
	}
	blockForever()
	return 0
}
