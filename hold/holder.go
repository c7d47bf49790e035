package hold

import (
	"context"
	"os"
)

// holder is one hold run by the OctoStore HTTP service (electionHold,
// lockHold); the host-local authority (package hold/local) runs its holds
// through Authority.Hold. Both print the same JSONL events with the
// same budget arithmetic, so the CLI and the supervisor treat them alike.
//
// Run returns the exit status (docs/protocol.md "Exit codes"): 11, 20, 64, 70,
// 130 or 143, never 0. A value on signals is SIGINT or SIGTERM; cancelling ctx
// counts as SIGTERM.
type holder interface {
	Run(ctx context.Context, signals <-chan os.Signal) int
}

var (
	_ holder = (*electionHold)(nil)
	_ holder = (*lockHold)(nil)
)
