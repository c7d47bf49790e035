package local

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform/procid"
)

// Hold runs one election or lock hold (hold.Authority). It campaigns by
// polling an exclusive lock on the name's file and prints the same events as
// the HTTP holds: waiting once, leader/acquired, renewed, and one of
// released, lost, uncertain or error. Budgets follow the HTTP holds too: an
// election's is 0.8 × TTL; a lock's is 0.8 × min(TTL, 30 s), the HTTP lock's
// session bound, and renewals come every half of that (earlier with jitter).
// There is no bearer token: the state directory's permissions govern access.
func (s *Store) Hold(ctx context.Context, spec hold.HoldSpec, signals <-chan os.Signal) int {
	return s.hold(ctx, request{HoldSpec: spec, poll: s.poll}, signals)
}

// request is one hold: the caller's spec and how often a waiting hold
// retries (0 means defaultPoll).
type request struct {
	hold.HoldSpec
	poll time.Duration
}

// run is one hold's lifetime on the store: the acquisition phase (acquirer)
// and then, while it holds the lock, the lease phase (lease).
type run struct {
	store *Store
	spec  hold.HoldSpec // defaults filled in
	poll  time.Duration
	// budgetTTL is the TTL the authority budget and renewals derive from.
	budgetTTL time.Duration
	// candidate is the --candidate value the holder record names (elections
	// only).
	candidate *string
	// waitingReason and lostToOther are the kind's reason codes for a busy
	// name and for a holder record that names someone else.
	waitingReason, lostToOther string

	w      *hold.Waiter
	em     *hold.Emitter
	paths  paths
	holder string    // random per acquisition
	self   procid.ID // this process, as the holder record names it
}

func (s *Store) hold(ctx context.Context, req request, signals <-chan os.Signal) int {
	spec := req.HoldSpec.WithDefaults()
	r := &run{store: s, spec: spec, poll: req.poll, budgetTTL: spec.TTL,
		waitingReason: hold.ReasonFollower, lostToOther: hold.ReasonTermChanged,
		w: &hold.Waiter{Clock: spec.Clock, Signals: signals, Ctx: ctx}}
	if spec.Kind == hold.KindLock {
		r.budgetTTL = min(spec.TTL, hold.LockSessionTTL)
		r.waitingReason, r.lostToOther = hold.ReasonHeld, hold.ReasonLeaseChanged
	} else {
		cand := spec.Candidate
		r.candidate = &cand
	}
	if r.poll <= 0 {
		r.poll = defaultPoll
	}
	if code := r.prepare(); code != 0 {
		return code
	}
	code, err := r.acquireAndHold()
	if err != nil {
		// Only clock failures get here (unsupported OS clock, overflow).
		r.diag("%v", err)
		return hold.ExitSoftware
	}
	return code
}

// prepare checks the name and its existing files before anything is
// printed; a refusal is 64 (70 for a missing store or randomness).
func (r *run) prepare() int {
	if r.store == nil {
		r.diag("no local state directory was opened")
		return hold.ExitSoftware
	}
	esc, err := escapeName(r.spec.Name)
	if err != nil {
		r.diag("%v", err)
		return hold.ExitUsage
	}
	r.paths = pathsFor(r.spec.Kind, esc)
	if err := r.store.checkNameEntries(r.paths); err != nil {
		r.diag("%v", err)
		return hold.ExitUsage
	}
	r.em = hold.NewEmitter(r.spec, r.store.Server())
	if r.holder, err = newHolderID(); err != nil {
		r.diag("%v", err)
		return hold.ExitSoftware
	}
	// Without a start time (an OS procid cannot read it on) the record names
	// the pid alone, as records always did.
	r.self, _ = procid.Self()
	r.self.Pid = os.Getpid()
	return 0
}

func (r *run) acquireAndHold() (int, error) {
	l, code, err := r.acquire()
	if l == nil || err != nil {
		return code, err
	}
	return l.hold()
}

// diag prints one stderr line; paths with control characters stay one line.
func (r *run) diag(format string, args ...any) {
	fmt.Fprintf(r.spec.Diag, "octostore: %s\n", hold.TerminalSafe(fmt.Sprintf(format, args...)))
}

func (r *run) signalExit() int {
	if r.w.Signal == syscall.SIGTERM {
		return hold.ExitSIGTERM
	}
	return hold.ExitSIGINT
}

// within is the deadline d from now on both clocks.
func (r *run) within(d time.Duration) (hold.Deadline, error) {
	now, err := hold.Now(r.spec.Clock)
	if err != nil {
		return hold.Deadline{}, err
	}
	return now.After(max(d, 0))
}

func (r *run) authorityEvent() string {
	if r.spec.Kind == hold.KindLock {
		return events.Acquired
	}
	return events.Leader
}
