//go:build !unix && !windows

package main

import (
	"fmt"
	"os"
	"time"
)

// Descendants that shrug off TERM/INT/HUP are a Unix notion; on this OS the
// mode is refused with exit 64 before anything runs.
const descendantSupported = false

func startDescendant(string, time.Duration, string) error { return errUnsupported }

func runDescendant([]string) int {
	fmt.Fprintln(os.Stderr, "fakehold: descendant: mode not supported on this OS")
	return exitUsage
}
