//go:build !linux

package contain

import (
	"context"
	"fmt"
	"os"
)

// SuperviseLean is Supervise: only Linux bundles a lean helper image for the
// supervisor to continue in.
func SuperviseLean(ctx context.Context, cfg Config) int { return Supervise(ctx, cfg) }

// RunLean is Run, for the same reason.
func RunLean(ctx context.Context, cfg RunConfig) int { return Run(ctx, cfg) }

func superviseMain([]string) int {
	fmt.Fprintln(os.Stderr, "octostore-supervisor: internal: no lean helper image on this platform")
	return ExitSoftware
}
