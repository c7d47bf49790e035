package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// lease is the hold phase: the lock is ours, and it renews on the HTTP holds'
// schedule (renew at budgetTTL/2, earlier with jitter only; safety = start +
// 0.8 × budgetTTL, start sampled before the proof) until a signal, a proof
// that the lock is lost, or the safety deadline.
type lease struct {
	*run
	file  *os.File
	rec   holderRecord
	start hold.Instant

	renewAt, safety hold.Deadline
}

func (l *lease) hold() (int, error) {
	defer l.file.Close() // idempotent after releaseFile; ends the OS lock on every exit path
	var err error
	l.renewAt, l.safety, err = l.schedule(l.start)
	if err != nil {
		return 0, err
	}
	for {
		o, err := l.w.Sleep(l.renewAt, true)
		if err != nil {
			return 0, err
		}
		if o == hold.Signalled {
			return l.shutdown()
		}
		if code, err := l.renew(); code != 0 || err != nil {
			return code, err
		}
	}
}

func (l *lease) schedule(from hold.Instant) (renewAt, safety hold.Deadline, err error) {
	guidance := uint64(l.budgetTTL / 2 / time.Millisecond)
	return hold.RenewalSchedule(from, l.budgetTTL, guidance, l.spec.Jitter())
}

// renew proves ownership and refreshes the holder record, retrying failures
// to check with backoff until the safety deadline. 0 means renewed.
func (l *lease) renew() (int, error) {
	for attempt := uint32(0); ; attempt++ {
		if l.safety.Reached(l.spec.Clock) {
			return l.uncertain(), nil
		}
		from, err := hold.Now(l.spec.Clock)
		if err != nil {
			return 0, err
		}
		expires := l.spec.Clock.Wall().Add(l.spec.TTL).UTC()
		o, opErr, err := hold.Await(l.w, l.safety, true, nil, func(context.Context) error { return l.refresh(expires) })
		var lost *lostError
		switch {
		case err != nil:
			return 0, err
		case o == hold.Signalled:
			return l.shutdown()
		case o == hold.DeadlineReached || l.safety.Reached(l.spec.Clock):
			return l.uncertain(), nil
		case opErr == nil:
			return l.renewed(from, expires)
		case errors.As(opErr, &lost):
			return l.lost(lost), nil
		}
		l.diag("local renewal failed: %v", opErr)
		if code, err := l.backoff(attempt); code != 0 || err != nil {
			return code, err
		}
	}
}

// refresh is one renewal on the file system.
func (l *lease) refresh(expires time.Time) error {
	if err := l.prove(l.file, l.rec.Term); err != nil {
		return err
	}
	upd := l.rec
	upd.ExpiresAt = expires
	if err := l.store.writeRecord(l.paths, upd); err != nil {
		return fmt.Errorf("write %s: %w", l.store.join(l.paths.record), err)
	}
	return nil
}

// renewed moves the schedule on from the renewal's start and prints renewed.
func (l *lease) renewed(from hold.Instant, expires time.Time) (int, error) {
	renewAt, safety, err := l.schedule(from)
	if err != nil {
		return 0, err
	}
	l.renewAt, l.safety, l.rec.ExpiresAt = renewAt, safety, expires
	obs, err := hold.ObserveAuthority(l.spec.Clock, safety)
	if errors.Is(err, hold.ErrBudgetExhausted) {
		return l.uncertain(), nil
	}
	if err != nil {
		return 0, err
	}
	term, exp := l.rec.Term, l.rec.ExpiresAt
	l.em.Emit(events.Renewed, hold.Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
	return 0, nil
}

// backoff waits before the next renewal attempt, never past safety.
func (l *lease) backoff(attempt uint32) (int, error) {
	d, err := l.within(hold.BackoffWaitDelay(attempt, l.spec.Jitter()))
	if err != nil {
		return 0, err
	}
	o, err := l.w.Sleep(d.Min(l.safety), true)
	if err != nil || o != hold.Signalled {
		return 0, err
	}
	return l.shutdown()
}

// shutdown releases after a signal within the shutdown budget (also capped
// by the remaining authority); a second signal does not interrupt it.
func (l *lease) shutdown() (int, error) {
	rem, err := l.safety.Remaining(l.spec.Clock)
	if err != nil {
		return 0, err
	}
	released := false
	if budget := hold.ShutdownBudget(l.spec.ShutdownTimeout, rem); budget > 0 {
		d, err := l.within(budget)
		if err != nil {
			return 0, err
		}
		o, relErr, err := hold.Await(l.w, d, false, nil, func(context.Context) error { return l.releaseFile(l.file, l.rec.Term) })
		if err != nil {
			return 0, err
		}
		if o == hold.Done && relErr != nil {
			l.diag("release not confirmed: %v", relErr)
		}
		released = o == hold.Done && relErr == nil
	}
	term := l.rec.Term
	if released {
		l.em.Emit(events.Released, hold.Fields{Term: &term, Reason: hold.ReasonSignal})
	} else {
		l.em.Emit(events.Uncertain, hold.Fields{Term: &term, Reason: hold.ReasonReleaseUnconfirmed})
	}
	return l.signalExit(), nil
}

func (l *lease) uncertain() int {
	term, exp := l.rec.Term, l.rec.ExpiresAt
	l.em.Emit(events.Uncertain, hold.Fields{Term: &term, ExpiresAt: &exp, Reason: hold.ReasonRenewalDeadlineExceeded})
	return hold.ExitLost
}

func (l *lease) lost(e *lostError) int {
	l.diag("%s", e.what)
	term, exp := l.rec.Term, l.rec.ExpiresAt
	l.em.Emit(events.Lost, hold.Fields{Term: &term, ExpiresAt: &exp, Reason: e.reason})
	return hold.ExitLost
}
