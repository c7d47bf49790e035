package etcd

import (
	"context"
	"errors"
	"math"
	"os"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// reasonLeaseNotCurrent is the lost reason when our key or lease is gone.
const reasonLeaseNotCurrent = "lease_not_current"

// shortTTL: below it a cluster leader election (1–2 s measured) can make a
// healthy hold uncertain.
const shortTTL = 10 * time.Second

// Hold runs one election or lock hold to its terminal event; see
// hold.Authority.
func (a *Authority) Hold(ctx context.Context, spec hold.HoldSpec, signals <-chan os.Signal) int {
	r := newRun(a, ctx, spec, signals)
	code, err := r.run()
	if err != nil {
		// Only clock failures get here (unsupported OS clock, overflow).
		a.diagf(r.spec.Diag, "%v", err)
		return hold.ExitSoftware
	}
	return code
}

// phase is where a run is before authority.
type phase int

const (
	phaseEnqueue phase = iota // no key in the queue yet (or it was lost)
	phaseWait                 // our key is queued behind older ones
	phaseExit                 // the run ends with an exit status
)

// run is one hold: a state machine whose methods are its steps.
type run struct {
	a    *Authority
	spec hold.HoldSpec
	em   *hold.Emitter
	w    *hold.Waiter
	dir  string         // the name's key prefix, ending in '/'
	acq  *hold.Deadline // scheduler-only acquisition deadline; nil = none
	c    candidacy
	// waited: the one waiting line behind a predecessor has been printed.
	waited  bool
	attempt uint32 // consecutive transient failures, for the backoff
}

// candidacy is our key in the queue and what its last renewal proved.
type candidacy struct {
	lease   clientv3.LeaseID
	key     string
	term    int64         // the key's create revision (invariant 1)
	ttl     time.Duration // min(requested, granted TTL)
	rev     int64         // header revision of the last read of our key
	d       hold.Deadline // authority deadline (invariant 3)
	renewAt hold.Deadline
	expires time.Time
}

func newRun(a *Authority, ctx context.Context, spec hold.HoldSpec, signals <-chan os.Signal) *run {
	spec = spec.WithDefaults()
	r := &run{a: a, spec: spec, em: hold.NewEmitter(spec, a.Server()),
		w: &hold.Waiter{Clock: spec.Clock, Signals: signals, Ctx: ctx}, dir: a.t.namePrefix(spec.Kind, spec.Name)}
	if spec.AcquireTimeout != nil {
		r.acq = &hold.Deadline{Scheduler: spec.Clock.Scheduler().Add(*spec.AcquireTimeout), ContinuousMS: math.MaxInt64}
	}
	return r
}

func (r *run) diag(format string, args ...any) { r.a.diagf(r.spec.Diag, format, args...) }

func (r *run) signalExit() int { return exitFor(r.w.Signal) }

// exitFor is the exit status after a signal: 143 for SIGTERM (and a
// cancelled context), 130 for anything else.
func exitFor(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return hold.ExitSIGTERM
	}
	return hold.ExitSIGINT
}

func (r *run) run() (int, error) {
	if r.spec.TTL < shortTTL {
		r.diag("warning: --ttl %s is below 10s; an etcd leader election (1-2 s) can then make a healthy hold uncertain", r.spec.TTL)
	}
	p := phaseEnqueue
	for {
		if r.acqReached() {
			return r.endBeforeAuthority(r.acquireTimeout()), nil
		}
		var code int
		var err error
		switch p {
		case phaseEnqueue:
			p, code, err = r.enqueue()
		case phaseWait:
			p, code, err = r.waitTurn()
		}
		if err != nil || p == phaseExit {
			return code, err
		}
	}
}

func (r *run) acqReached() bool { return r.acq != nil && r.acq.Reached(r.spec.Clock) }

func (r *run) acquireTimeout() int {
	r.em.Emit(events.Error, hold.Fields{Reason: hold.ReasonAcquireTimeout})
	return hold.ExitAcquireTimeout
}

// preBound bounds one call before authority by one attempt and the
// acquisition deadline. Not by the queued lease's D: a renewal must still be
// possible after a slow spell, and lead() refuses a stale D.
func (r *run) preBound() (hold.Deadline, error) {
	now, err := hold.Now(r.spec.Clock)
	if err != nil {
		return hold.Deadline{}, err
	}
	d, err := now.After(attemptCap + hold.AuthorityPoll)
	if err != nil {
		return hold.Deadline{}, err
	}
	if r.acq != nil {
		d = d.Min(*r.acq)
	}
	return d, nil
}

// stop says how a step ends when a call before authority did not succeed:
// the next phase (retry after a backoff), or phaseExit with code or a clock
// error.
type stop struct {
	next phase
	code int
	err  error
}

// preCall is one call before authority; a nil *stop means it succeeded.
func preCall[T any](r *run, op func(context.Context) (T, error)) (T, *stop) {
	var zero T
	bound, err := r.preBound()
	if err != nil {
		return zero, &stop{phaseExit, 0, err}
	}
	ans, err := call(r.w, bound, true, op)
	switch {
	case err != nil:
		return zero, &stop{phaseExit, 0, err}
	case ans.o == hold.Signalled:
		return zero, &stop{phaseExit, r.endBeforeAuthority(r.signalExit()), nil}
	case ans.o == hold.DeadlineReached && r.acqReached():
		return zero, &stop{phaseExit, r.endBeforeAuthority(r.acquireTimeout()), nil}
	case ans.o == hold.DeadlineReached:
		ans.err = context.DeadlineExceeded
	}
	if ans.err != nil {
		next, code, err := r.transient(ans.err)
		return zero, &stop{next, code, err}
	}
	r.attempt = 0
	return ans.v, nil
}

// transient handles a failed call before authority: credentials and
// permissions end the hold (exit 64, fix them); anything else is reported
// and retried after a backoff, keeping our place in the queue.
func (r *run) transient(cause error) (phase, int, error) {
	if code := failureCode(cause); code != "" {
		r.diag("etcd refused the request (%s): check the user:password in OCTOSTORE_TOKEN_FILE and its role's permissions on %s", code, r.dir)
		r.em.Emit(events.Error, hold.Fields{Reason: code})
		return phaseExit, r.endBeforeAuthority(hold.ExitUsage), nil
	}
	var usage *hold.UsageError
	if errors.As(cause, &usage) {
		r.diag("%v", usage)
		return phaseExit, r.endBeforeAuthority(hold.ExitUsage), nil
	}
	r.diag("etcd %s: %v", r.a.Server(), cause)
	delay := hold.BackoffWaitDelay(r.attempt, r.spec.Jitter())
	r.attempt++
	d, err := hold.AnnounceRetry(r.em, r.spec.Clock, delay, hold.CodeTransportError)
	if err != nil {
		return phaseExit, 0, err
	}
	return r.pause(d)
}

// pause waits until d (bounded by the acquisition deadline) before the next
// step; a signal ends the run.
func (r *run) pause(d hold.Deadline) (phase, int, error) {
	if r.acq != nil {
		d = d.Min(*r.acq)
	}
	o, err := r.w.Sleep(d, true)
	if err != nil {
		return phaseExit, 0, err
	}
	if o == hold.Signalled {
		return phaseExit, r.endBeforeAuthority(r.signalExit()), nil
	}
	if r.c.lease == 0 {
		return phaseEnqueue, -1, nil
	}
	return phaseWait, -1, nil
}

// endBeforeAuthority revokes a queued lease (bounded, result ignored): a
// candidate that gives up must not leave a key that successors wait behind.
// Nothing was ever held under it, so this is not invariant 7's release.
func (r *run) endBeforeAuthority(code int) int {
	if r.c.lease != 0 {
		r.revoke(r.spec.ShutdownTimeout)
		r.c = candidacy{}
	}
	return code
}

// revoke sends one Revoke bounded by budget, not interrupted by signals.
func (r *run) revoke(budget time.Duration) bool {
	now, err := hold.Now(r.spec.Clock)
	if err != nil {
		return false
	}
	d, err := now.After(min(budget, hold.MaxShutdownBudget))
	if err != nil {
		return false
	}
	lease := r.c.lease
	ans, err := call(r.w, d, false, func(ctx context.Context) (*clientv3.LeaseRevokeResponse, error) {
		return r.a.client.Revoke(ctx, lease)
	})
	if err == nil && ans.o == hold.Done && ans.err != nil {
		r.diag("etcd revoke of lease %s not confirmed: %v", leaseHex(int64(lease)), ans.err)
	}
	return err == nil && ans.o == hold.Done && ans.err == nil
}
