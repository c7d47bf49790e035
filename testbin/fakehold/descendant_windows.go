package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/windows"
)

const descendantSupported = true

// startDescendant re-executes fakehold in the hidden descendant mode. It
// stays in the hold's console and process group (it is what a supervisor must
// kill along with the hold) but gets NUL for stdio so it never keeps the
// events pipe open.
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
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// runDescendant is the descendant itself: immune to CTRL_C, CTRL_BREAK and
// CTRL_CLOSE as far as Windows lets a process be (CTRL_CLOSE still ends it
// once the handler returns), it records its identity, creates the marker
// after the delay and lives on until its job is terminated.
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
	if err := setCtrlHandler(func(ctrl uint32) uintptr {
		switch ctrl {
		case windows.CTRL_C_EVENT, windows.CTRL_BREAK_EVENT, windows.CTRL_CLOSE_EVENT:
			return 1
		}
		return 0
	}); err != nil {
		return 70
	}
	// The pidfile line is written only after the handler is in place, so a
	// test that sees the line knows the descendant is already immune.
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
