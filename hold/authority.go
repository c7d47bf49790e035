package hold

import (
	"context"
	"io"
	"os"
	"time"
)

// Authority is one place that decides who holds an election or a lock: the
// OctoStore HTTP service, the host-local store (package hold/local) or an
// etcd cluster (package hold/etcd). The CLI and the supervisor's embedded
// hold pick one from --server and then treat them alike; each prints the same
// JSONL events with the same budget arithmetic and exit codes.
type Authority interface {
	// Server is the normalized authority URL without credentials: what every
	// event's server field and every human line shows.
	Server() string
	// Hold runs one election or lock hold to its terminal event and returns
	// the exit status (docs/protocol.md "Exit codes"): 11, 20, 64, 70, 130 or
	// 143, never 0. A value on signals is SIGINT or SIGTERM; cancelling ctx
	// counts as SIGTERM.
	Hold(ctx context.Context, spec HoldSpec, signals <-chan os.Signal) int
	// CreateElection mints a new election ID (`octostore election create`).
	CreateElection(ctx context.Context) (ElectionCreated, error)
	// Status reads who holds kind/name now (`… status`).
	Status(ctx context.Context, kind Kind, name string) (Report, error)
	// Watch prints the holder of spec.Name on every change until a signal or
	// ctx ends it (`… watch`), and returns the exit status.
	Watch(ctx context.Context, spec WatchSpec, signals <-chan os.Signal) int
	// Close releases connections and files; the Authority is unusable after.
	Close() error
}

// HoldSpec is one hold's request, already validated by the caller
// (ValidateCandidate, ValidateTTL, ValidateTimeouts).
type HoldSpec struct {
	// Kind chooses an election or a lock hold.
	Kind Kind
	// Name is the election ID or the lock name.
	Name string
	// Candidate is the candidate ID (elections only).
	Candidate string
	// TTL is the lease the hold asks for; budgets are fractions of it.
	TTL time.Duration
	// AcquireTimeout bounds waiting for authority; nil waits until a signal.
	AcquireTimeout *time.Duration
	// ShutdownTimeout caps release after a signal (ShutdownBudget); zero
	// means MaxShutdownBudget (WithDefaults).
	ShutdownTimeout time.Duration
	// Clock and Jitter default to SystemClock and RandomJitter.
	Clock  Clock
	Jitter Jitter
	// Out receives the JSONL events, Diag the "octostore: …" diagnostics.
	Out, Diag io.Writer
}

// WithDefaults is s with what a caller may leave out filled in: SystemClock,
// RandomJitter, writers that discard, and MaxShutdownBudget for a
// ShutdownTimeout of zero. The authorities outside this package (hold/local,
// hold/etcd) start from it, so a field left out means the same to each.
func (s HoldSpec) WithDefaults() HoldSpec {
	defaults(&s.Clock, &s.Jitter, &s.Out, &s.Diag)
	if s.ShutdownTimeout <= 0 {
		s.ShutdownTimeout = MaxShutdownBudget
	}
	return s
}

// WatchSpec is one watch's request.
type WatchSpec struct {
	// Kind and Name say what to watch: an election ID or a lock name.
	Kind Kind
	Name string
	// JSON selects one JSON object per line instead of human lines.
	JSON bool
	// Out receives the snapshot lines, Diag the "octostore: …" diagnostics.
	Out, Diag io.Writer
}

// Report is one status reading, printable either way.
type Report interface {
	// JSON is the --json line, without its newline.
	JSON() []byte
	// Human is the line a person reads, without its newline.
	Human() string
}
