package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/fencelog"
)

const (
	exitUsage    = 64
	exitSoftware = 70
	// heartbeat is how often a worker writes to the fenced log: often enough
	// that "the last heartbeat" bounds the moment it stopped working.
	heartbeat = 20 * time.Millisecond
)

func main() { os.Exit(run()) }

func run() int {
	mode := os.Getenv("ATTACKER_MODE")
	if code, ok := sideAttack(mode); ok {
		return code
	}
	if mode != "attack" && mode != "fenced" {
		return usage("ATTACKER_MODE must be attack or fenced, not %q", mode)
	}
	// Before anything else: a hostile worker shrugs off a graceful stop, and
	// a fenced one must get its stop line out.
	sigs := make(chan os.Signal, 1)
	if mode == "attack" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	path := os.Getenv("ATTACKER_FENCE")
	if path == "" {
		return usage("ATTACKER_FENCE is required")
	}
	term, err := strconv.ParseUint(os.Getenv("OCTOSTORE_FENCING_TERM"), 10, 64)
	if err != nil || term == 0 {
		return usage("OCTOSTORE_FENCING_TERM must be a positive integer, not %q", os.Getenv("OCTOSTORE_FENCING_TERM"))
	}
	if _, err := fencelog.Append(path, term, "start", mode); err != nil {
		return fail(err)
	}
	if mode == "attack" {
		cfg, err := attackConfig()
		if err != nil {
			return usage("%v", err)
		}
		if err := attack(cfg, term); err != nil {
			return fail(err)
		}
	}
	// An attacker never gets a signal here: it ignores them all.
	if err := fencelog.Heartbeat(path, term, mode, heartbeat, sigs); err != nil {
		return fail(err)
	}
	return 0
}

// config is the attack mode's environment.
type config struct {
	goFile, report string
	stateDirs      []string
}

func attackConfig() (config, error) {
	c := config{goFile: os.Getenv("ATTACKER_GO"), report: os.Getenv("ATTACKER_REPORT")}
	if c.goFile == "" || c.report == "" {
		return c, fmt.Errorf("ATTACKER_GO and ATTACKER_REPORT are required in attack mode")
	}
	for _, d := range strings.Split(os.Getenv("ATTACKER_STATE_DIRS"), ":") {
		if d != "" {
			c.stateDirs = append(c.stateDirs, d)
		}
	}
	return c, nil
}

func usage(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "attacker: "+format+"\n", a...)
	return exitUsage
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "attacker: %v\n", err)
	return exitSoftware
}
