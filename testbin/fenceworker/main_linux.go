package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/fencelog"
)

const (
	exitUsage    = 64
	exitSoftware = 70
	// heartbeat is how often the worker writes: the last heartbeat bounds
	// the moment it stopped working to within this.
	heartbeat = 10 * time.Millisecond
)

func main() { os.Exit(run()) }

func run() int {
	// First, so that a SIGTERM arriving at once still gets its stop line.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if len(os.Args) < 2 || len(os.Args) > 3 {
		return usage("usage: fenceworker LOG [ROLE]")
	}
	path, role := os.Args[1], "worker"
	if len(os.Args) == 3 {
		role = os.Args[2]
	}
	term, err := strconv.ParseUint(os.Getenv("OCTOSTORE_FENCING_TERM"), 10, 64)
	if err != nil || term == 0 {
		return usage(fmt.Sprintf("OCTOSTORE_FENCING_TERM must be a positive integer, not %q", os.Getenv("OCTOSTORE_FENCING_TERM")))
	}
	if _, err := fencelog.Append(path, term, "start", role); err != nil {
		return fail(err)
	}
	if err := fencelog.Heartbeat(path, term, role, heartbeat, sigs); err != nil {
		return fail(err)
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "fenceworker:", err)
	return exitSoftware
}

func usage(msg string) int {
	fmt.Fprintln(os.Stderr, "fenceworker:", msg)
	return exitUsage
}
