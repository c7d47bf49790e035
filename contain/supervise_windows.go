package contain

import (
	"context"
	"fmt"
)

// Hidden argv[1] values of the helper processes (unused on Windows so far).
const (
	GuardianArg = "__octostore-guardian"
	ShimArg     = "__octostore-shim"
	JoinArg     = "__octostore-join"
)

// Supervise refuses to run on Windows until the job-object backend exists: running
// a protected worker without a container would be exactly the silent fallback this
// tool exists to prevent.
func Supervise(_ context.Context, cfg Config) int {
	fmt.Fprintln(cfg.Stderr, "octostore-supervisor: Windows job-object containment is not available in this build yet; refusing to start a worker")
	return ExitUsage
}

// GuardianMain is not used on Windows yet.
func GuardianMain() int { return ExitSoftware }

// ShimMain is not used on Windows yet.
func ShimMain() int { return ExitSoftware }
