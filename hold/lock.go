package hold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// Reason codes only the lock hold produces (docs/protocol.md "Events").
const (
	ReasonHeld                        = "held"
	ReasonDelayed                     = "delayed"
	ReasonLeaseChanged                = "lease_changed"
	ReasonSessionConfirmationDeadline = "session_confirmation_deadline_exceeded"
)

// maxKeepaliveIntervalSecs bounds the server's keepalive_interval_secs
// (docs/protocol.md "Lock hold").
const maxKeepaliveIntervalSecs = 30

// LockHold is `octostore lock hold --json` (docs/protocol.md "Lock hold"). All
// fields are inputs; validation (docs/protocol.md "Local validation") and
// loading the token (LoadToken) are the caller's job.
type LockHold struct {
	Client *Client
	Clock  Clock
	Jitter Jitter
	// Name is the raw lock name; TTL the lock TTL in whole seconds.
	Name string
	TTL  time.Duration
	// Token is the bearer token. It never appears in events or diagnostics.
	Token string
	// AcquireTimeout is --acquire-timeout: nil = none.
	AcquireTimeout *time.Duration
	// ShutdownTimeout bounds the release and session DELETE after a signal
	// (further capped at 2 s and the remaining authority) and, alone, the
	// session DELETE on the other exit paths.
	ShutdownTimeout time.Duration
	Out, Diag       io.Writer
}

// lockRun is one LockHold.Run's state. It reuses the election runState for
// its bounded wait and call helpers (runState is keyed on *ElectionHold, so a
// shim ElectionHold carries the client, clock and jitter).
type lockRun struct {
	*runState
	h   *LockHold
	acq *Deadline

	sessionID     string
	interval      time.Duration
	nextKeepalive Deadline
	sessionDL     Deadline

	leaseID string
}

// Run executes the hold and returns the exit status
// (docs/protocol.md "Exit codes"): 11, 20, 64, 70, 130 or 143; never 0. Signals
// and ctx behave as for ElectionHold.Run.
func (h *LockHold) Run(ctx context.Context, signals <-chan os.Signal) int {
	defaults(&h.Clock, &h.Jitter, &h.Diag)
	shim := &ElectionHold{Client: h.Client, Clock: h.Clock, Jitter: h.Jitter, Diag: h.Diag, ShutdownTimeout: h.ShutdownTimeout}
	out := h.Out
	if out == nil {
		out = io.Discard
	}
	r := &lockRun{h: h, runState: &runState{h: shim, ctx: ctx, signals: signals, em: &Emitter{
		out: out, clock: h.Clock, kind: events.Lock, name: h.Name,
		server: h.Client.Server().URL, candidate: nil, // never candidate_id on locks
	}}}
	code, err := r.run()
	if err != nil {
		fmt.Fprintf(h.Diag, "octostore: %s\n", r.redact(err.Error()))
		return ExitSoftware
	}
	return code
}

// redact removes every secret this run knows from s.
func (r *lockRun) redact(s string) string {
	return Redact(Redact(Redact(s, r.h.Token), r.leaseID), r.sessionID)
}

func (r *lockRun) diagf(f *Failure) {
	fmt.Fprintf(r.h.Diag, "octostore: %s\n", r.redact(f.Diagnostic()))
}

func (r *lockRun) ttlSeconds() uint64 { return uint64(r.h.TTL / time.Second) }

func (r *lockRun) lockPath(suffix string) string { return "/locks/" + EncodeSegment(r.h.Name) + suffix }

func (r *lockRun) sessionPath() string { return "/sessions/" + EncodeSegment(r.sessionID) }

func (r *lockRun) acqReached() bool { return r.acq != nil && r.acq.Reached(r.h.Clock) }

// within is the deadline budget from now.
func (r *lockRun) within(d time.Duration) (Deadline, error) {
	now, err := Now(r.h.Clock)
	if err != nil {
		return Deadline{}, err
	}
	return now.After(max(d, 0))
}

// deleteSession ends the session, bounded by d; the result is ignored.
func (r *lockRun) deleteSessionBy(d Deadline) error {
	if r.sessionID == "" {
		return nil
	}
	req := Request{Method: http.MethodDelete, Path: r.sessionPath(), Bearer: r.h.Token, Accepted: []int{http.StatusNoContent}}
	_, f, _, err := r.call(d, false, req, nil)
	if f != nil {
		r.diagf(f)
	}
	return err
}

// deleteSession is the cleanup DELETE outside the signal path, bounded by
// --shutdown-timeout alone.
func (r *lockRun) deleteSession() error {
	if r.h.ShutdownTimeout <= 0 {
		return nil
	}
	d, err := r.within(r.h.ShutdownTimeout)
	if err != nil {
		return err
	}
	return r.deleteSessionBy(d)
}

// Terminal helpers that DELETE the session at the right moment
// (docs/protocol.md "Lock hold" session cleanup): before an acquire-timeout
// error, after loss events.
func (r *lockRun) acquireTimeout() (int, error) {
	if err := r.deleteSession(); err != nil {
		return 0, err
	}
	r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
	return ExitAcquireTimeout, nil
}

func (r *lockRun) finishAfter(code int) (int, error) {
	if err := r.deleteSession(); err != nil {
		return 0, err
	}
	return code, nil
}

func (r *lockRun) uncertainPre(reason string) (int, error) {
	r.em.Emit(events.Uncertain, Fields{Reason: reason})
	return r.finishAfter(ExitLost)
}

func (r *lockRun) signalled() (int, error) { return r.finishAfter(r.signalExit()) }

func (r *lockRun) keepalive(d Deadline) (*Failure, outcome, error) {
	var kr KeepaliveResponse
	req := Request{Method: http.MethodPost, Path: r.sessionPath() + "/keepalive", Bearer: r.h.Token, Accepted: []int{http.StatusOK}}
	start, err := Now(r.h.Clock)
	if err != nil {
		return nil, outDeadline, err
	}
	_, f, o, err := r.call(d, true, req, func(b []byte) (err error) { kr, err = DecodeKeepaliveResponse(b); return err })
	if err != nil || o != outDone || f != nil {
		return f, o, err
	}
	if kr.SessionID != r.sessionID {
		return &Failure{Status: http.StatusOK, Code: CodeSessionIdentityMismatch,
			Details: "server confirmed a different session"}, outDone, nil
	}
	if err := r.anchorSession(start); err != nil {
		return nil, outDone, err
	}
	return nil, outDone, nil
}

func (r *lockRun) anchorSession(start Instant) error {
	nk, err := start.After(r.interval)
	if err != nil {
		return err
	}
	sd, err := SessionConfirmation(start)
	if err != nil {
		return err
	}
	r.nextKeepalive, r.sessionDL = nk, sd
	return nil
}

func (r *lockRun) waiting(delay time.Duration, reason string) {
	ms := uint64(delay / time.Millisecond)
	r.em.Emit(events.Waiting, Fields{RetryAfter: &ms, Reason: reason})
}

func (r *lockRun) run() (int, error) {
	h := r.h
	clock := h.Clock
	if h.AcquireTimeout != nil {
		d := schedulerDeadline(clock.Scheduler().Add(*h.AcquireTimeout))
		r.acq = &d
	}
	if code, done, err := r.createSession(); done || err != nil {
		return code, err
	}
	return r.acquireLoop()
}

// createSession is Phase A. done reports that code is final.
func (r *lockRun) createSession() (code int, done bool, err error) {
	h := r.h
	clock := h.Clock
	for attempt := uint32(0); ; attempt++ {
		if r.acqReached() {
			r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
			return ExitAcquireTimeout, true, nil
		}
		start, err := Now(clock)
		if err != nil {
			return 0, true, err
		}
		// Bounded only by the acquisition deadline and the request timeout.
		bound := Deadline{Scheduler: start.Scheduler.Add(100 * 365 * 24 * time.Hour), ContinuousMS: continuousNever}
		if r.acq != nil {
			bound = *r.acq
		}
		var sr SessionCreateResponse
		req := Request{Method: http.MethodPost, Path: "/sessions", Body: sessionCreateBody(), Bearer: h.Token, Accepted: []int{http.StatusCreated}}
		_, f, o, err := r.call(bound, true, req, func(b []byte) (err error) { sr, err = DecodeSessionCreateResponse(b); return err })
		if err != nil {
			return 0, true, err
		}
		switch o {
		case outSignal:
			return r.signalExit(), true, nil
		case outDeadline:
			r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
			return ExitAcquireTimeout, true, nil
		}
		if f == nil {
			r.sessionID = sr.SessionID
			if sr.KeepaliveIntervalSecs < 1 || sr.KeepaliveIntervalSecs > maxKeepaliveIntervalSecs {
				r.diagf(InvalidSessionIntervalFailure())
				code, err := r.finishAfter(ExitSoftware)
				return code, true, err
			}
			r.interval = time.Duration(sr.KeepaliveIntervalSecs) * time.Second
			return 0, false, r.anchorSession(start)
		}
		r.diagf(f)
		if !f.RetryableBeforeAcquire() {
			return ExitSoftware, true, nil
		}
		delay := WaitDelay(f, attempt, h.Jitter())
		r.waiting(delay, f.Code)
		d, err := r.within(delay)
		if err != nil {
			return 0, true, err
		}
		if r.acq != nil {
			d = d.Min(*r.acq)
		}
		o, err = r.wait(d, true)
		if err != nil {
			return 0, true, err
		}
		if o == outSignal {
			return r.signalExit(), true, nil
		}
	}
}

// acquireLoop is Phase B.
func (r *lockRun) acquireLoop() (int, error) {
	h := r.h
	clock := h.Clock
	var attempt uint32
	var retryAt *Deadline
	for {
		if r.acqReached() {
			return r.acquireTimeout()
		}
		if r.sessionDL.Reached(clock) {
			return r.uncertainPre(ReasonSessionConfirmationDeadline)
		}
		if r.nextKeepalive.Reached(clock) {
			f, o, err := r.keepalive(r.sessionDL)
			if err != nil {
				return 0, err
			}
			switch {
			case o == outSignal:
				return r.signalled()
			case o == outDeadline:
				continue
			case f == nil:
				attempt = 0
				continue
			case f.ProvesLoss():
				r.diagf(f)
				return r.uncertainPre(f.Code)
			case f.RetryableBeforeAcquire():
				r.diagf(f)
				delay := WaitDelay(f, attempt, h.Jitter())
				attempt++
				r.waiting(delay, f.Code)
				d, err := r.within(delay)
				if err != nil {
					return 0, err
				}
				o, err := r.wait(d.Min(r.sessionDL), true)
				if err != nil {
					return 0, err
				}
				if o == outSignal {
					return r.signalled()
				}
				continue
			default:
				r.diagf(f)
				return r.finishAfter(ExitSoftware)
			}
		}
		if retryAt != nil && !retryAt.Reached(clock) {
			d, err := r.within(AuthorityPoll)
			if err != nil {
				return 0, err
			}
			d = d.Min(*retryAt).Min(r.nextKeepalive).Min(r.sessionDL)
			if r.acq != nil {
				d = d.Min(*r.acq)
			}
			o, err := r.wait(d, true)
			if err != nil {
				return 0, err
			}
			if o == outSignal {
				return r.signalled()
			}
			continue
		}
		retryAt = nil

		start, err := Now(clock)
		if err != nil {
			return 0, err
		}
		initial, err := start.After(SafetyDuration(h.TTL))
		if err != nil {
			return 0, err
		}
		bound := initial.Min(r.sessionDL).Min(r.nextKeepalive)
		if r.acq != nil {
			bound = bound.Min(*r.acq)
		}
		var ar AcquireResponse
		req := Request{Method: http.MethodPost, Path: r.lockPath("/acquire"), Bearer: h.Token,
			Body: acquireBody(r.sessionID, r.ttlSeconds()), Accepted: []int{http.StatusOK, http.StatusConflict}}
		_, f, o, err := r.call(bound, true, req, func(b []byte) (err error) { ar, err = DecodeAcquireResponse(b); return err })
		if err != nil {
			return 0, err
		}
		switch o {
		case outSignal:
			return r.signalled()
		case outDeadline:
			switch {
			case r.acqReached():
				return r.acquireTimeout()
			case initial.Reached(clock):
				return r.uncertainPre(ReasonInitialAuthorityDeadline)
			}
			continue // keepalive (or session deadline) due
		}
		if r.acqReached() {
			return r.acquireTimeout()
		}
		if r.sessionDL.Reached(clock) {
			return r.uncertainPre(ReasonSessionConfirmationDeadline)
		}
		if f == nil && ar.Status == LockStatusAcquired {
			r.leaseID = ar.LeaseID
			if initial.Reached(clock) {
				return r.uncertainPre(ReasonInitialAuthorityDeadline)
			}
			obs, err := ObserveAuthority(clock, initial.Min(r.sessionDL))
			if errors.Is(err, ErrBudgetExhausted) {
				reason := ReasonInitialAuthorityDeadline
				if r.sessionDL.NoLaterThan(initial) {
					reason = ReasonSessionConfirmationDeadline
				}
				return r.uncertainPre(reason)
			}
			if err != nil {
				return 0, err
			}
			term, exp := ar.FencingToken, ar.ExpiresAt
			r.em.Emit(events.Acquired, Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
			return r.holdPhase(start, ar)
		}
		var delay time.Duration
		var reason string
		switch {
		case f == nil:
			delay = GuidedWaitDelay(ar.RetryAfterMS, h.Jitter())
			reason = ReasonHeld
			if ar.Status == LockStatusDelayed {
				reason = ReasonDelayed
			}
		case f.RetryableBeforeAcquire():
			r.diagf(f)
			delay, reason = WaitDelay(f, attempt, h.Jitter()), f.Code
		default:
			r.diagf(f)
			if err := r.deleteSession(); err != nil {
				return 0, err
			}
			r.em.Emit(events.Error, Fields{Reason: f.Code})
			return f.ExitCode(), nil
		}
		attempt++
		r.waiting(delay, reason)
		d, err := r.within(delay)
		if err != nil {
			return 0, err
		}
		retryAt = &d
	}
}

// holdPhase is Phase C: renew the lease and keep the session alive until a
// signal, a loss or an authority deadline. start is the acquire request's
// start.
func (r *lockRun) holdPhase(start Instant, ar AcquireResponse) (int, error) {
	h := r.h
	clock := h.Clock
	term, expires := ar.FencingToken, ar.ExpiresAt
	renewAt, safety, err := RenewalSchedule(start, h.TTL, ar.RenewAfterMS, h.Jitter())
	if err != nil {
		return 0, err
	}
	authority := func() Deadline { return safety.Min(r.sessionDL) }
	uncertainHeld := func() (int, error) {
		reason := ReasonRenewalDeadlineExceeded
		if r.sessionDL.NoLaterThan(safety) {
			reason = ReasonSessionConfirmationDeadline
		}
		exp := expires
		r.em.Emit(events.Uncertain, Fields{Term: &term, ExpiresAt: &exp, Reason: reason})
		return r.finishAfter(ExitLost)
	}
	lost := func(reason string) (int, error) {
		exp := expires
		r.em.Emit(events.Lost, Fields{Term: &term, ExpiresAt: &exp, Reason: reason})
		return r.finishAfter(ExitLost)
	}
	shutdown := func() (int, error) {
		rem, err := authority().Remaining(clock)
		if err != nil {
			return 0, err
		}
		budget := ShutdownBudget(h.ShutdownTimeout, rem)
		ok := false
		if budget > 0 {
			d, err := r.within(budget)
			if err != nil {
				return 0, err
			}
			req := Request{Method: http.MethodPost, Path: r.lockPath("/release"), Bearer: h.Token,
				Body: releaseBody(r.leaseID), Accepted: []int{http.StatusOK}}
			resp, f, o, err := r.call(d, false, req, nil)
			if err != nil {
				return 0, err
			}
			if f != nil {
				r.diagf(f)
			}
			ok = o == outDone && f == nil && resp.Status == http.StatusOK && isJSONNull(resp.Body)
			if err := r.deleteSessionBy(d); err != nil {
				return 0, err
			}
		}
		if ok {
			r.em.Emit(events.Released, Fields{Term: &term, Reason: ReasonSignal})
		} else {
			r.em.Emit(events.Uncertain, Fields{Term: &term, Reason: ReasonReleaseUnconfirmed})
		}
		return r.signalExit(), nil
	}

	for {
		// The authority deadline is waited for too: a server may announce a
		// keepalive interval (up to 30 s) that ends past the 24 s session
		// bound, and the end of authority must be reported when it comes,
		// not at the next keepalive.
		o, err := r.wait(renewAt.Min(r.nextKeepalive).Min(authority()), true)
		if err != nil {
			return 0, err
		}
		if o == outSignal {
			return shutdown()
		}
		if authority().Reached(clock) {
			return uncertainHeld()
		}
		sessionDue := r.nextKeepalive.Reached(clock)
		leaseDue := renewAt.Reached(clock)
		if !sessionDue && !leaseDue {
			continue
		}
	retry:
		for attempt := uint32(0); ; attempt++ {
			if authority().Reached(clock) {
				return uncertainHeld()
			}
			if sessionDue {
				f, o, err := r.keepalive(authority())
				if err != nil {
					return 0, err
				}
				switch {
				case o == outSignal:
					return shutdown()
				case o == outDeadline:
					continue retry
				case authority().Reached(clock):
					return uncertainHeld()
				case f == nil:
					sessionDue = false
				case f.ProvesLoss():
					r.diagf(f)
					return lost(f.Code)
				default:
					r.diagf(f)
				}
			}
			if leaseDue {
				rs, err := Now(clock)
				if err != nil {
					return 0, err
				}
				var rr LockRenewResponse
				req := Request{Method: http.MethodPost, Path: r.lockPath("/renew"), Bearer: h.Token,
					Body: lockRenewBody(r.leaseID, r.ttlSeconds()), Accepted: []int{http.StatusOK}}
				_, f, o, err := r.call(authority(), true, req, func(b []byte) (err error) { rr, err = DecodeLockRenewResponse(b); return err })
				if err != nil {
					return 0, err
				}
				switch {
				case o == outSignal:
					return shutdown()
				case o == outDeadline:
					continue retry
				case authority().Reached(clock):
					return uncertainHeld()
				case f == nil && rr.LeaseID != r.leaseID:
					return lost(ReasonLeaseChanged)
				case f == nil:
					newRenewAt, newSafety, err := RenewalSchedule(rs, h.TTL, rr.RenewAfterMS, h.Jitter())
					if err != nil {
						return 0, err
					}
					renewAt, safety, expires = newRenewAt, newSafety, rr.ExpiresAt
					leaseDue = false
				case f.ProvesLoss():
					r.diagf(f)
					return lost(f.Code)
				default:
					r.diagf(f)
				}
			}
			if !sessionDue && !leaseDue {
				obs, err := ObserveAuthority(clock, authority())
				if errors.Is(err, ErrBudgetExhausted) {
					return uncertainHeld()
				}
				if err != nil {
					return 0, err
				}
				exp := expires
				r.em.Emit(events.Renewed, Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
				break retry
			}
			d, err := r.within(BackoffWaitDelay(attempt, h.Jitter()))
			if err != nil {
				return 0, err
			}
			o, err := r.wait(d.Min(authority()), true)
			if err != nil {
				return 0, err
			}
			if o == outSignal {
				return shutdown()
			}
		}
	}
}
