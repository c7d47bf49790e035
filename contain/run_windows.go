package contain

import (
	"context"
	"fmt"
	"io"
	"time"
)

// RunConfig is one `octostore-supervisor run`.
type RunConfig struct {
	Argv       []string
	Env        []string
	Backend    Backend
	Grace      time.Duration
	ProofBound time.Duration
	Timeout    time.Duration
	JSON       bool
	Stdout     io.Writer
	Stderr     io.Writer
}

// Run refuses on Windows until the job-object backend exists.
func Run(_ context.Context, cfg RunConfig) int {
	fmt.Fprintln(cfg.Stderr, "octostore-supervisor: Windows job-object containment is not available in this build yet; refusing to run a command")
	return ExitUsage
}
