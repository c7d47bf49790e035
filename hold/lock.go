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
	reasonDelayed                     = "delayed"
	ReasonLeaseChanged                = "lease_changed"
	reasonSessionConfirmationDeadline = "session_confirmation_deadline_exceeded"
)

// maxKeepaliveIntervalSecs bounds the server's keepalive_interval_secs
// (docs/protocol.md "Lock hold").
const maxKeepaliveIntervalSecs = 30

// lockHold is `octostore lock hold --json` (docs/protocol.md "Lock hold"). All
// fields are inputs; validation (docs/protocol.md "Local validation") and
// loading the token (LoadToken) are the caller's job.
type lockHold struct {
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

// lockRun is one lockHold.Run. Like etcd's concurrency.Election over a
// *Session, it composes two leases the server grants: the session (Phase A
// creates it, keepalives confirm it, every exit deletes it) and the lock's
// lease held through it (Phase B acquires it, Phase C renews it, a signal
// releases it). Authority is the earlier of the two deadlines.
type lockRun struct {
	h     *lockHold
	w     *Waiter
	api   caller
	em    *Emitter
	acq   acquireBound
	sess  session
	lease lease
}

// session is the lock session (docs/protocol.md "Lock hold" Phase A): its
// keepalives are due every interval, and each confirmation bounds authority
// by sessionConfirmation from the keepalive's start.
type session struct {
	r        *lockRun
	id       string
	interval time.Duration
	// nextKeepalive is when the next keepalive is due; confirmed is when the
	// last confirmation stops counting.
	nextKeepalive, confirmed Deadline
}

// lease is the lock's lease (docs/protocol.md "Lock hold" Phases B–C).
type lease struct {
	r       *lockRun
	id      string
	term    uint64 // the fencing token
	expires time.Time
	// renewAt is when the next renewal is due; safety is when the lease's
	// authority ends unless a renewal confirms it.
	renewAt, safety Deadline
}

// Run executes the hold and returns the exit status
// (docs/protocol.md "Exit codes"): 11, 20, 64, 70, 130 or 143; never 0. Signals
// and ctx behave as for electionHold.Run.
func (h *lockHold) Run(ctx context.Context, signals <-chan os.Signal) int {
	defaults(&h.Clock, &h.Jitter, &h.Diag, &h.Out)
	w := &Waiter{Clock: h.Clock, Signals: signals, Ctx: ctx}
	r := &lockRun{h: h, w: w, api: caller{client: h.Client, w: w},
		em: NewEmitter(h.spec(), h.Client.server.URL), acq: newAcquireBound(h.Clock, h.AcquireTimeout)}
	r.sess.r, r.lease.r = r, r
	code, err := r.run()
	if err != nil {
		fmt.Fprintf(h.Diag, "octostore: %s\n", r.redact(err.Error()))
		return ExitSoftware
	}
	return code
}

// spec is the HoldSpec this hold runs.
func (h *lockHold) spec() HoldSpec {
	return HoldSpec{Kind: KindLock, Name: h.Name, TTL: h.TTL, AcquireTimeout: h.AcquireTimeout,
		ShutdownTimeout: h.ShutdownTimeout, Clock: h.Clock, Jitter: h.Jitter, Out: h.Out, Diag: h.Diag}
}

// redact removes every secret this run knows from s.
func (r *lockRun) redact(s string) string {
	return Redact(Redact(Redact(s, r.h.Token), r.lease.id), r.sess.id)
}

func (r *lockRun) diagf(f *Failure) {
	fmt.Fprintf(r.h.Diag, "octostore: %s\n", r.redact(f.diagnostic()))
}

func (r *lockRun) ttlSeconds() uint64 { return uint64(r.h.TTL / time.Second) }

func (r *lockRun) lockPath(suffix string) string { return "/locks/" + EncodeSegment(r.h.Name) + suffix }

// request is an authenticated request of this hold.
func (r *lockRun) request(method, path string, body []byte, accepted ...int) request {
	return request{Method: method, Path: path, Body: body, Bearer: r.h.Token, Accepted: accepted}
}

// Terminal helpers that DELETE the session at the right moment
// (docs/protocol.md "Lock hold" session cleanup): before an acquire-timeout
// error, after loss events.
func (r *lockRun) acquireTimeout() (int, error) {
	if err := r.sess.deleteWithin(r.h.ShutdownTimeout); err != nil {
		return 0, err
	}
	r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
	return ExitAcquireTimeout, nil
}

// finishAfter deletes the session (bounded by --shutdown-timeout alone) and
// ends the hold with code.
func (r *lockRun) finishAfter(code int) (int, error) {
	if err := r.sess.deleteWithin(r.h.ShutdownTimeout); err != nil {
		return 0, err
	}
	return code, nil
}

func (r *lockRun) uncertainPre(reason string) (int, error) {
	r.em.Emit(events.Uncertain, Fields{Reason: reason})
	return r.finishAfter(ExitLost)
}

func (r *lockRun) signalled() (int, error) { return r.finishAfter(r.w.signalExit()) }

func (r *lockRun) run() (int, error) {
	if code, done, err := r.createSession(); done || err != nil {
		return code, err
	}
	return r.acquireLoop()
}

// create asks for a session, bounded by d.
func (s *session) create(d Deadline) (sessionCreateResponse, *Failure, Outcome, error) {
	var sr sessionCreateResponse
	req := s.r.request(http.MethodPost, "/sessions", sessionCreateBody(), http.StatusCreated)
	_, f, o, err := s.r.api.call(d, true, req, func(b []byte) (err error) { sr, err = decodeSessionCreateResponse(b); return err })
	return sr, f, o, err
}

// keepalive confirms the session, bounded by d, and re-anchors its deadlines
// on the request's start.
func (s *session) keepalive(d Deadline) (*Failure, Outcome, error) {
	var kr keepaliveResponse
	req := s.r.request(http.MethodPost, s.path()+"/keepalive", nil, http.StatusOK)
	start, err := Now(s.r.h.Clock)
	if err != nil {
		return nil, DeadlineReached, err
	}
	_, f, o, err := s.r.api.call(d, true, req, func(b []byte) (err error) { kr, err = decodeKeepaliveResponse(b); return err })
	if err != nil || o != Done || f != nil {
		return f, o, err
	}
	if kr.SessionID != s.id {
		return &Failure{Status: http.StatusOK, Code: codeSessionIdentityMismatch,
			Details: "server confirmed a different session"}, Done, nil
	}
	return nil, Done, s.anchor(start)
}

func (s *session) anchor(start Instant) error {
	nk, err := start.After(s.interval)
	if err != nil {
		return err
	}
	sd, err := sessionConfirmation(start)
	if err != nil {
		return err
	}
	s.nextKeepalive, s.confirmed = nk, sd
	return nil
}

func (s *session) path() string { return "/sessions/" + EncodeSegment(s.id) }

// delete ends the session, bounded by d; the result is ignored.
func (s *session) delete(d Deadline) error {
	if s.id == "" {
		return nil
	}
	_, f, _, err := s.r.api.call(d, false, s.r.request(http.MethodDelete, s.path(), nil, http.StatusNoContent), nil)
	if f != nil {
		s.r.diagf(f)
	}
	return err
}

// deleteWithin is the cleanup DELETE outside the signal path, bounded by
// budget (--shutdown-timeout) alone.
func (s *session) deleteWithin(budget time.Duration) error {
	if budget <= 0 {
		return nil
	}
	d, err := within(s.r.h.Clock, budget)
	if err != nil {
		return err
	}
	return s.delete(d)
}

// createSession is Phase A. done reports that code is final.
func (r *lockRun) createSession() (code int, done bool, err error) {
	clock := r.h.Clock
	for attempt := uint32(0); ; attempt++ {
		if r.acq.reached(clock) {
			r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
			return ExitAcquireTimeout, true, nil
		}
		start, err := Now(clock)
		if err != nil {
			return 0, true, err
		}
		// Bounded only by the acquisition deadline and the request timeout.
		sr, f, o, err := r.sess.create(r.acq.cap(forever))
		switch {
		case err != nil:
			return 0, true, err
		case o == Signalled:
			return r.w.signalExit(), true, nil
		case o == DeadlineReached:
			r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
			return ExitAcquireTimeout, true, nil
		case f == nil:
			return r.sessionCreated(start, sr)
		}
		r.diagf(f)
		if !f.retryableBeforeAcquire() {
			return ExitSoftware, true, nil
		}
		delay := waitDelay(f, attempt, r.h.Jitter())
		d, err := AnnounceRetry(r.em, r.h.Clock, delay, f.Code)
		if err != nil {
			return 0, true, err
		}
		if o, err := r.w.Sleep(r.acq.cap(d), true); err != nil || o == Signalled {
			return r.w.signalExit(), true, err
		}
	}
}

// sessionCreated checks the new session's keepalive interval and anchors its
// deadlines on start, the create request's start.
func (r *lockRun) sessionCreated(start Instant, sr sessionCreateResponse) (int, bool, error) {
	r.sess.id = sr.SessionID
	if sr.KeepaliveIntervalSecs < 1 || sr.KeepaliveIntervalSecs > maxKeepaliveIntervalSecs {
		r.diagf(invalidSessionIntervalFailure())
		code, err := r.finishAfter(ExitSoftware)
		return code, true, err
	}
	r.sess.interval = time.Duration(sr.KeepaliveIntervalSecs) * time.Second
	return 0, false, r.sess.anchor(start)
}

// acquireLoop is Phase B: acquire the lease through the session, keeping the
// session alive while the lock is held by someone else.
func (r *lockRun) acquireLoop() (int, error) {
	clock := r.h.Clock
	var attempt uint32
	var retryAt *Deadline
	for {
		switch {
		case r.acq.reached(clock):
			return r.acquireTimeout()
		case r.sess.confirmed.Reached(clock):
			return r.uncertainPre(reasonSessionConfirmationDeadline)
		case r.sess.nextKeepalive.Reached(clock):
			if code, done, err := r.keepaliveBeforeAcquire(&attempt); done || err != nil {
				return code, err
			}
			continue
		case retryAt != nil && !retryAt.Reached(clock):
			// Poll: the keepalive, the session's and the acquisition's
			// deadlines may come before the retry.
			d, err := within(clock, AuthorityPoll)
			if err != nil {
				return 0, err
			}
			d = r.acq.cap(d.Min(*retryAt).Min(r.sess.nextKeepalive).Min(r.sess.confirmed))
			if o, err := r.w.Sleep(d, true); err != nil || o == Signalled {
				return r.signalledOr(err)
			}
			continue
		}
		code, done, next, err := r.tryAcquire(&attempt)
		if done || err != nil {
			return code, err
		}
		retryAt = next
	}
}

// signalledOr is the signal exit, unless err ends the hold first.
func (r *lockRun) signalledOr(err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return r.signalled()
}

// keepaliveBeforeAcquire keeps the session alive in Phase B; a retryable
// failure waits (bounded by the session deadline) before the loop goes on.
func (r *lockRun) keepaliveBeforeAcquire(attempt *uint32) (int, bool, error) {
	f, o, err := r.sess.keepalive(r.sess.confirmed)
	if code, done, err := settled(o, err, r.signalled, nil); done {
		return code, true, err
	}
	switch {
	case o == DeadlineReached:
		return 0, false, nil // the loop reports the deadline
	case f == nil:
		*attempt = 0
		return 0, false, nil
	case f.provesLoss():
		r.diagf(f)
		code, err := r.uncertainPre(f.Code)
		return code, true, err
	case !f.retryableBeforeAcquire():
		r.diagf(f)
		code, err := r.finishAfter(ExitSoftware)
		return code, true, err
	}
	r.diagf(f)
	delay := waitDelay(f, *attempt, r.h.Jitter())
	*attempt++
	d, err := AnnounceRetry(r.em, r.h.Clock, delay, f.Code)
	if err != nil {
		return 0, true, err
	}
	if o, err := r.w.Sleep(d.Min(r.sess.confirmed), true); err != nil || o == Signalled {
		code, err := r.signalledOr(err)
		return code, true, err
	}
	return 0, false, nil
}

// acquire asks for the lease, bounded by d.
func (l *lease) acquire(d Deadline) (acquireResponse, *Failure, Outcome, error) {
	var ar acquireResponse
	req := l.r.request(http.MethodPost, l.r.lockPath("/acquire"), acquireBody(l.r.sess.id, l.r.ttlSeconds()),
		http.StatusOK, http.StatusConflict)
	_, f, o, err := l.r.api.call(d, true, req, func(b []byte) (err error) { ar, err = decodeAcquireResponse(b); return err })
	return ar, f, o, err
}

// tryAcquire is one acquire attempt of Phase B; unless done, retryAt is when
// the next one may start (nil: at once, once the keepalive is through).
func (r *lockRun) tryAcquire(attempt *uint32) (code int, done bool, retryAt *Deadline, err error) {
	clock := r.h.Clock
	start, err := Now(clock)
	if err != nil {
		return 0, true, nil, err
	}
	initial, err := start.After(SafetyDuration(r.h.TTL))
	if err != nil {
		return 0, true, nil, err
	}
	ar, f, o, err := r.lease.acquire(r.acq.cap(initial.Min(r.sess.confirmed).Min(r.sess.nextKeepalive)))
	switch {
	case err != nil:
		return 0, true, nil, err
	case o == Signalled:
		code, err = r.signalled()
	case o == DeadlineReached && r.acq.reached(clock):
		code, err = r.acquireTimeout()
	case o == DeadlineReached && initial.Reached(clock):
		code, err = r.uncertainPre(ReasonInitialAuthorityDeadline)
	case o == DeadlineReached:
		return 0, false, nil, nil // keepalive (or session deadline) due
	case r.acq.reached(clock):
		code, err = r.acquireTimeout()
	case r.sess.confirmed.Reached(clock):
		code, err = r.uncertainPre(reasonSessionConfirmationDeadline)
	case f == nil && ar.Status == lockStatusAcquired:
		code, err = r.acquired(start, initial, ar)
	default:
		return r.acquireRetry(f, ar, attempt)
	}
	return code, true, nil, err
}

// acquireRetry reports an acquire that did not grant the lease and schedules
// the next one.
func (r *lockRun) acquireRetry(f *Failure, ar acquireResponse, attempt *uint32) (int, bool, *Deadline, error) {
	var delay time.Duration
	var reason string
	switch {
	case f == nil:
		delay = guidedWaitDelay(ar.RetryAfterMS, r.h.Jitter())
		reason = ReasonHeld
		if ar.Status == lockStatusDelayed {
			reason = reasonDelayed
		}
	case f.retryableBeforeAcquire():
		r.diagf(f)
		delay, reason = waitDelay(f, *attempt, r.h.Jitter()), f.Code
	default:
		r.diagf(f)
		if err := r.sess.deleteWithin(r.h.ShutdownTimeout); err != nil {
			return 0, true, nil, err
		}
		r.em.Emit(events.Error, Fields{Reason: f.Code})
		return f.ExitCode(), true, nil, nil
	}
	*attempt++
	d, err := AnnounceRetry(r.em, r.h.Clock, delay, reason)
	if err != nil {
		return 0, true, nil, err
	}
	return 0, false, &d, nil
}

// acquired turns a granted lease into authority, bounded by both the
// lease's initial deadline and the session's confirmation, and holds it.
func (r *lockRun) acquired(start Instant, initial Deadline, ar acquireResponse) (int, error) {
	clock := r.h.Clock
	r.lease.id = ar.LeaseID
	if initial.Reached(clock) {
		return r.uncertainPre(ReasonInitialAuthorityDeadline)
	}
	obs, err := ObserveAuthority(clock, initial.Min(r.sess.confirmed))
	if errors.Is(err, ErrBudgetExhausted) {
		reason := ReasonInitialAuthorityDeadline
		if r.sess.confirmed.noLaterThan(initial) {
			reason = reasonSessionConfirmationDeadline
		}
		return r.uncertainPre(reason)
	}
	if err != nil {
		return 0, err
	}
	l := &r.lease
	l.term, l.expires = ar.FencingToken, ar.ExpiresAt
	r.em.Emit(events.Acquired, Fields{Term: &l.term, ExpiresAt: &l.expires, Authority: &obs})
	l.renewAt, l.safety, err = RenewalSchedule(start, r.h.TTL, ar.RenewAfterMS, r.h.Jitter())
	if err != nil {
		return 0, err
	}
	return r.holdPhase()
}

// authority is when the held lock stops being ours: the lease's safety
// deadline or the session's confirmation, whichever comes first.
func (r *lockRun) authority() Deadline { return r.lease.safety.Min(r.sess.confirmed) }

// holdPhase is Phase C: renew the lease and keep the session alive until a
// signal, a loss or an authority deadline.
func (r *lockRun) holdPhase() (int, error) {
	clock := r.h.Clock
	for {
		// The authority deadline is waited for too: a server may announce a
		// keepalive interval (up to 30 s) that ends past the 24 s session
		// bound, and the end of authority must be reported when it comes,
		// not at the next keepalive.
		o, err := r.w.Sleep(r.lease.renewAt.Min(r.sess.nextKeepalive).Min(r.authority()), true)
		switch {
		case err != nil:
			return 0, err
		case o == Signalled:
			return r.shutdown()
		case r.authority().Reached(clock):
			return r.uncertainHeld()
		}
		sessionDue, leaseDue := r.sess.nextKeepalive.Reached(clock), r.lease.renewAt.Reached(clock)
		if !sessionDue && !leaseDue {
			continue
		}
		if code, done, err := r.confirm(sessionDue, leaseDue); done || err != nil {
			return code, err
		}
	}
}

// confirm sends the keepalive and the renewal that are due, retrying with
// backoff within authority until both are confirmed (a renewed event) or the
// hold ends.
func (r *lockRun) confirm(sessionDue, leaseDue bool) (code int, done bool, err error) {
	clock := r.h.Clock
	for attempt := uint32(0); ; attempt++ {
		if r.authority().Reached(clock) {
			code, err := r.uncertainHeld()
			return code, true, err
		}
		if sessionDue {
			if sessionDue, code, done, err = r.keepaliveHeld(); done || err != nil {
				return code, true, err
			}
		}
		if leaseDue {
			if leaseDue, code, done, err = r.renewHeld(); done || err != nil {
				return code, true, err
			}
		}
		if !sessionDue && !leaseDue {
			return r.renewed()
		}
		d, err := within(clock, BackoffWaitDelay(attempt, r.h.Jitter()))
		if err != nil {
			return 0, true, err
		}
		if o, err := r.w.Sleep(d.Min(r.authority()), true); err != nil || o == Signalled {
			code, err := r.shutdownOr(err)
			return code, true, err
		}
	}
}

// shutdownOr is the signal shutdown, unless err ends the hold first.
func (r *lockRun) shutdownOr(err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return r.shutdown()
}

// keepaliveHeld is one Phase C keepalive; due reports that it is still due
// (a failure to retry).
func (r *lockRun) keepaliveHeld() (due bool, code int, done bool, err error) {
	f, o, err := r.sess.keepalive(r.authority())
	return r.heldStep(f, o, err)
}

// renewHeld is one Phase C lease renewal, as keepaliveHeld.
func (r *lockRun) renewHeld() (due bool, code int, done bool, err error) {
	lost, f, o, err := r.lease.renew(r.authority())
	if lost {
		code, err := r.lost(ReasonLeaseChanged)
		return false, code, true, err
	}
	return r.heldStep(f, o, err)
}

// heldStep judges a Phase C request's result. A deadline outcome means
// authority is reached (the request was bounded by it), which the next check
// reports.
func (r *lockRun) heldStep(f *Failure, o Outcome, err error) (due bool, code int, done bool, _ error) {
	if code, done, err := settled(o, err, r.shutdown, r.uncertainHeld); done {
		return true, code, true, err
	}
	switch {
	case r.authority().Reached(r.h.Clock):
		code, err = r.uncertainHeld()
		return true, code, true, err
	case f == nil:
		return false, 0, false, nil
	case f.provesLoss():
		r.diagf(f)
		code, err = r.lost(f.Code)
		return true, code, true, err
	}
	r.diagf(f)
	return true, 0, false, nil
}

// renew renews the lease, bounded by d. lost reports that the server renewed
// a different lease; on success the schedule moves on from the request's
// start.
func (l *lease) renew(d Deadline) (lost bool, f *Failure, o Outcome, err error) {
	h := l.r.h
	start, err := Now(h.Clock)
	if err != nil {
		return false, nil, DeadlineReached, err
	}
	var rr lockRenewResponse
	req := l.r.request(http.MethodPost, l.r.lockPath("/renew"), lockRenewBody(l.id, l.r.ttlSeconds()), http.StatusOK)
	_, f, o, err = l.r.api.call(d, true, req, func(b []byte) (err error) { rr, err = decodeLockRenewResponse(b); return err })
	// An answer that came after authority ended is judged by the caller's
	// deadline check, before its content.
	if err != nil || o != Done || f != nil || d.Reached(h.Clock) {
		return false, f, o, err
	}
	if rr.LeaseID != l.id {
		return true, nil, Done, nil
	}
	l.renewAt, l.safety, err = RenewalSchedule(start, h.TTL, rr.RenewAfterMS, h.Jitter())
	l.expires = rr.ExpiresAt
	return false, nil, Done, err
}

// renewed reports a confirmed session and lease.
func (r *lockRun) renewed() (int, bool, error) {
	obs, err := ObserveAuthority(r.h.Clock, r.authority())
	if errors.Is(err, ErrBudgetExhausted) {
		code, err := r.uncertainHeld()
		return code, true, err
	}
	if err != nil {
		return 0, true, err
	}
	exp := r.lease.expires
	r.em.Emit(events.Renewed, Fields{Term: &r.lease.term, ExpiresAt: &exp, Authority: &obs})
	return 0, false, nil
}

func (r *lockRun) uncertainHeld() (int, error) {
	reason := ReasonRenewalDeadlineExceeded
	if r.sess.confirmed.noLaterThan(r.lease.safety) {
		reason = reasonSessionConfirmationDeadline
	}
	exp := r.lease.expires
	r.em.Emit(events.Uncertain, Fields{Term: &r.lease.term, ExpiresAt: &exp, Reason: reason})
	return r.finishAfter(ExitLost)
}

func (r *lockRun) lost(reason string) (int, error) {
	exp := r.lease.expires
	r.em.Emit(events.Lost, Fields{Term: &r.lease.term, ExpiresAt: &exp, Reason: reason})
	return r.finishAfter(ExitLost)
}

// release gives the lease back, bounded by d, and reports whether the server
// confirmed it.
func (l *lease) release(d Deadline) (bool, error) {
	req := l.r.request(http.MethodPost, l.r.lockPath("/release"), releaseBody(l.id), http.StatusOK)
	resp, f, o, err := l.r.api.call(d, false, req, nil)
	if f != nil {
		l.r.diagf(f)
	}
	return o == Done && f == nil && resp.Status == http.StatusOK && isJSONNull(resp.Body), err
}

// shutdown releases the lease and deletes the session after a signal, both
// within one budget: --shutdown-timeout capped by the remaining authority.
func (r *lockRun) shutdown() (int, error) {
	rem, err := r.authority().Remaining(r.h.Clock)
	if err != nil {
		return 0, err
	}
	ok := false
	if budget := ShutdownBudget(r.h.ShutdownTimeout, rem); budget > 0 {
		d, err := within(r.h.Clock, budget)
		if err != nil {
			return 0, err
		}
		if ok, err = r.lease.release(d); err != nil {
			return 0, err
		}
		if err := r.sess.delete(d); err != nil {
			return 0, err
		}
	}
	if ok {
		r.em.Emit(events.Released, Fields{Term: &r.lease.term, Reason: ReasonSignal})
	} else {
		r.em.Emit(events.Uncertain, Fields{Term: &r.lease.term, Reason: ReasonReleaseUnconfirmed})
	}
	return r.w.signalExit(), nil
}
