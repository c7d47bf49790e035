package main

import (
	"fmt"
	"os"

	"github.com/octostore-supervisor/supervisor/platform"
)

// init makes the client non-dumpable before main runs, before it reads a
// token, opens a lease or prints an event: a process of the same user can
// then neither ptrace it, nor read its /proc/<pid>/environ, nor take its
// descriptors with pidfd_getfd (its event output under a supervisor). A Go
// program cannot do this from its first instruction; before it the runtime
// and the packages' own initialisation run, none of which reads a secret.
// Under a supervisor that window is at the hold's start, before any worker of
// that run exists. The embedded hold is non-dumpable from its execve
// (contain's helperImage).
func init() {
	if err := platform.SetNonDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "octostore: %v\n", err)
		os.Exit(70)
	}
}
