package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// acquirer is the acquisition phase: try the name's lock, and while another
// process holds it print one waiting line and retry every poll interval,
// until the lock is ours, --acquire-timeout passes (11), a signal comes
// (130/143) or an attempt outlasts the initial authority deadline (20).
type acquirer struct {
	*run
	// deadline is --acquire-timeout on the scheduler clock; nil waits until
	// a signal.
	deadline *hold.Deadline
	waited   bool
}

// taken is what one attempt got: the locked file and the record it wrote
// (file nil: the name is busy), or the failure.
type taken struct {
	file *os.File
	rec  holderRecord
	err  error
}

func (r *run) acquire() (*lease, int, error) {
	a := &acquirer{run: r}
	if t := r.spec.AcquireTimeout; t != nil {
		a.deadline = &hold.Deadline{Scheduler: r.spec.Clock.Scheduler().Add(*t), ContinuousMS: math.MaxInt64}
	}
	for {
		if a.timedOut() {
			return nil, a.timeout(), nil
		}
		l, code, err := a.attempt()
		if l != nil || code != 0 || err != nil {
			return l, code, err
		}
		if code, err := a.retryLater(); code != 0 || err != nil {
			return nil, code, err
		}
	}
}

// attempt tries the lock once, bounded end to end by the initial authority
// deadline and the acquisition deadline. It returns the lease once the
// authority event is printed, an exit status, or neither when the name is
// busy.
func (a *acquirer) attempt() (*lease, int, error) {
	start, err := hold.Now(a.spec.Clock)
	if err != nil {
		return nil, 0, err
	}
	initial, err := start.After(hold.SafetyDuration(a.budgetTTL))
	if err != nil {
		return nil, 0, err
	}
	bound := initial
	if a.deadline != nil {
		bound = bound.Min(*a.deadline)
	}
	// An attempt the deadline abandons may still get the lock: it is
	// released as soon as it does.
	o, got, err := hold.Await(a.w, bound, true, a.releaseTaken, a.take)
	switch {
	case err != nil:
		return nil, 0, err
	case o == hold.Signalled:
		return nil, a.signalExit(), nil
	case o == hold.DeadlineReached && a.deadline != nil && !a.deadline.Scheduler.After(initial.Scheduler):
		return nil, a.timeout(), nil
	case o == hold.DeadlineReached:
		return nil, a.uncertain(), nil
	case got.err != nil:
		a.diag("local authority failed: %v", got.err)
		a.em.Emit(events.Error, hold.Fields{Reason: reasonFailure})
		return nil, hold.ExitSoftware, nil
	case got.file == nil:
		return nil, 0, nil
	}
	return a.authority(start, initial, got)
}

// authority turns a taken lock into a lease and prints leader/acquired, or
// releases the lock when the success came too late to be authority
// (docs/protocol.md "Easy to miss" item 5).
func (a *acquirer) authority(start hold.Instant, initial hold.Deadline, got taken) (*lease, int, error) {
	if a.timedOut() {
		a.releaseTaken(got)
		return nil, a.timeout(), nil
	}
	obs, err := hold.ObserveAuthority(a.spec.Clock, initial)
	if errors.Is(err, hold.ErrBudgetExhausted) {
		a.releaseTaken(got)
		return nil, a.uncertain(), nil
	}
	if err != nil {
		got.file.Close()
		return nil, 0, err
	}
	term, exp := got.rec.Term, got.rec.ExpiresAt
	a.em.Emit(a.authorityEvent(), hold.Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
	return &lease{run: a.run, file: got.file, rec: got.rec, start: start}, 0, nil
}

// retryLater prints the one waiting line and waits one poll interval; a
// non-zero status means a signal ended the wait.
func (a *acquirer) retryLater() (int, error) {
	if !a.waited {
		// One waiting line, not one per poll: the HTTP hold prints one per
		// server answer, which comes every few seconds at most.
		ms := uint64(a.poll / time.Millisecond)
		a.em.Emit(events.Waiting, hold.Fields{RetryAfter: &ms, Reason: a.waitingReason})
		a.waited = true
	}
	d, err := a.within(a.poll)
	if err != nil {
		return 0, err
	}
	if a.deadline != nil {
		d = d.Min(*a.deadline)
	}
	o, err := a.w.Sleep(d, true)
	if err != nil || o != hold.Signalled {
		return 0, err
	}
	return a.signalExit(), nil
}

func (a *acquirer) timedOut() bool {
	return a.deadline != nil && a.deadline.Reached(a.spec.Clock)
}

func (a *acquirer) timeout() int {
	a.em.Emit(events.Error, hold.Fields{Reason: hold.ReasonAcquireTimeout})
	return hold.ExitAcquireTimeout
}

func (a *acquirer) uncertain() int {
	a.em.Emit(events.Uncertain, hold.Fields{Reason: hold.ReasonInitialAuthorityDeadline})
	return hold.ExitLost
}

// take is one attempt on the file system: lock the name's file, draw the
// next term, copy it into the lock file and write the holder record. ctx is
// cancelled when the attempt is abandoned.
func (r *run) take(ctx context.Context) taken {
	f, st, err := r.tryAcquire()
	if err != nil || st != acquireOK {
		return taken{err: err}
	}
	t, err := r.store.bumpTerm(ctx, f, r.paths.lock)
	if err != nil {
		f.Close()
		return taken{err: err}
	}
	// Not fsynced: the counter, synced first, is never below it.
	if err := writeTerm(f, t); err != nil {
		f.Close()
		return taken{err: fmt.Errorf("write %s: %w", r.store.join(r.paths.lock), err)}
	}
	now := r.spec.Clock.Wall()
	rec := r.record(t, now, now.Add(r.spec.TTL))
	if err := r.store.writeRecord(r.paths, rec); err != nil {
		f.Close()
		return taken{err: fmt.Errorf("write %s: %w", r.store.join(r.paths.record), err)}
	}
	return taken{file: f, rec: rec}
}

// releaseTaken gives back what an attempt took, if anything.
func (r *run) releaseTaken(got taken) {
	if got.file != nil {
		_ = r.releaseFile(got.file, got.rec.Term)
	}
}
