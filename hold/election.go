package hold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// Reason codes the election hold itself produces (docs/protocol.md "Events").
const (
	ReasonFollower                  = "follower"
	ReasonAcquireTimeout            = "acquire_timeout"
	ReasonInitialAuthorityDeadline  = "initial_authority_deadline_exceeded"
	reasonAuthorityIdentityMismatch = "authority_identity_mismatch"
	ReasonRenewalDeadlineExceeded   = "renewal_deadline_exceeded"
	ReasonTermChanged               = "term_changed"
	ReasonSignal                    = "signal"
	ReasonReleaseUnconfirmed        = "release_unconfirmed"
)

const (
	electionVacant  = "vacant"
	continuousNever = math.MaxInt64
	pathCampaign    = "/campaign"
	pathRenew       = "/renew"
	pathResign      = "/resign"
)

// electionHold is `octostore election hold --json`
// (docs/protocol.md "Election hold"). All fields are inputs; validation
// (docs/protocol.md "Local validation") is the caller's job.
type electionHold struct {
	Client *Client
	Clock  Clock
	Jitter Jitter
	// ElectionID is the room, Candidate the --candidate value.
	ElectionID, Candidate string
	// TTL is the lease TTL in whole seconds (5–300).
	TTL time.Duration
	// AcquireTimeout is --acquire-timeout: nil = none; a pointer to 0 times
	// out at once, as upstream does.
	AcquireTimeout *time.Duration
	// ShutdownTimeout bounds the resign after a signal (further capped at 2 s
	// and the remaining authority).
	ShutdownTimeout time.Duration
	// Out receives the JSONL events, Diag the "octostore: …" diagnostics.
	Out  io.Writer
	Diag io.Writer
	// DefaultServer: Client's server is the hosted default, named by neither
	// --server nor OCTOSTORE_URL (ServerDefaulted). Repeated transport errors
	// then add one hint on Diag that it cannot be reached and that --server
	// local serves contenders on one machine: offline, the hold would
	// otherwise wait quietly forever.
	DefaultServer bool
}

// unreachableHintAfter is how many transport errors before authority, against
// the default server, precede the hint (with the backoff, about 1.5 s).
const unreachableHintAfter = 3

// electionRun is one electionHold.Run: the campaign phase (run), then, once
// leader, the term it holds (electionTerm).
type electionRun struct {
	h   *electionHold
	w   *Waiter
	api caller
	em  *Emitter
	acq acquireBound
	// transportErrors counts the campaign's transport errors (unreachableHint).
	transportErrors int
}

// Run executes the hold and returns the exit status
// (docs/protocol.md "Exit codes"): 11, 20, 64, 70, 130 or 143; never 0. A value
// on signals is SIGINT/SIGTERM (anything other than syscall.SIGTERM counts as
// SIGINT); cancelling ctx is treated as SIGTERM. Only one Run may use a given
// electionHold at a time.
func (h *electionHold) Run(ctx context.Context, signals <-chan os.Signal) int {
	defaults(&h.Clock, &h.Jitter, &h.Diag, &h.Out)
	w := &Waiter{Clock: h.Clock, Signals: signals, Ctx: ctx}
	r := &electionRun{h: h, w: w, api: caller{client: h.Client, w: w},
		em: NewEmitter(h.spec(), h.Client.server.URL), acq: newAcquireBound(h.Clock, h.AcquireTimeout)}
	code, err := r.run()
	if err != nil {
		// Only clock failures get here (unsupported OS clock, overflow).
		fmt.Fprintf(h.Diag, "octostore: %v\n", err)
		return ExitSoftware
	}
	return code
}

// spec is the HoldSpec this hold runs.
func (h *electionHold) spec() HoldSpec {
	return HoldSpec{Kind: KindElection, Name: h.ElectionID, Candidate: h.Candidate, TTL: h.TTL,
		AcquireTimeout: h.AcquireTimeout, ShutdownTimeout: h.ShutdownTimeout, Clock: h.Clock, Jitter: h.Jitter,
		Out: h.Out, Diag: h.Diag}
}

func (r *electionRun) diag(f *Failure) { fmt.Fprintf(r.h.Diag, "octostore: %s\n", f.diagnostic()) }

// unreachableHint counts a campaign's transport errors and, at the
// unreachableHintAfter-th against the default server, says once why the hold
// keeps waiting and what serves one machine without a network.
func (r *electionRun) unreachableHint(f *Failure) {
	if f.Code != CodeTransportError {
		return
	}
	r.transportErrors++
	if r.h.DefaultServer && r.transportErrors == unreachableHintAfter {
		fmt.Fprintf(r.h.Diag, "octostore: cannot reach the default hosted authority %s (%d attempts failed); still retrying. For contenders on one machine use --server local\n",
			r.h.Client.server.URL, r.transportErrors)
	}
}

// schedulerDeadline is a deadline on the scheduler clock only (the
// acquisition deadline of docs/protocol.md "Election hold" step 1).
func schedulerDeadline(t time.Time) Deadline {
	return Deadline{Scheduler: t, ContinuousMS: continuousNever}
}

// acquireBound is --acquire-timeout as a scheduler-clock deadline; the zero
// value (no timeout) is never reached and caps nothing.
type acquireBound struct{ d *Deadline }

func newAcquireBound(c Clock, timeout *time.Duration) acquireBound {
	if timeout == nil {
		return acquireBound{}
	}
	d := schedulerDeadline(c.Scheduler().Add(*timeout))
	return acquireBound{&d}
}

func (a acquireBound) reached(c Clock) bool { return a.d != nil && a.d.Reached(c) }

// cap bounds d by the acquisition deadline.
func (a acquireBound) cap(d Deadline) Deadline {
	if a.d == nil {
		return d
	}
	return d.Min(*a.d)
}

func (r *electionRun) path(suffix string) string {
	return "/elections/" + EncodeSegment(r.h.ElectionID) + suffix
}

func (r *electionRun) ttlSeconds() uint64 { return uint64(r.h.TTL / time.Second) }

func (r *electionRun) acquireTimeout() int {
	r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
	return ExitAcquireTimeout
}

func (r *electionRun) uncertainPre(reason string) int {
	r.em.Emit(events.Uncertain, Fields{Reason: reason})
	return ExitLost
}

// run is the campaign phase (docs/protocol.md "Election hold" steps 1–7):
// campaign until leader, an acquire timeout, a fatal answer or a signal.
func (r *electionRun) run() (int, error) {
	clock := r.h.Clock
	for attempt := uint32(0); ; attempt++ {
		if r.acq.reached(clock) {
			return r.acquireTimeout(), nil
		}
		start, err := Now(clock)
		if err != nil {
			return 0, err
		}
		initial, err := start.After(SafetyDuration(r.h.TTL))
		if err != nil {
			return 0, err
		}
		cr, f, o, err := r.campaign(r.acq.cap(initial))
		switch {
		case err != nil:
			return 0, err
		case o == Signalled:
			return r.w.signalExit(), nil
		case o == DeadlineReached && r.acq.d != nil && !r.acq.d.Scheduler.After(initial.Scheduler):
			return r.acquireTimeout(), nil
		case o == DeadlineReached:
			return r.uncertainPre(ReasonInitialAuthorityDeadline), nil
		case f == nil && cr.Status == ElectionStatusLeader:
			return r.lead(start, initial, cr)
		case r.acq.reached(clock):
			return r.acquireTimeout(), nil
		}
		if code, done, err := r.retry(f, cr, attempt); done || err != nil {
			return code, err
		}
	}
}

func (r *electionRun) campaign(d Deadline) (campaignResponse, *Failure, Outcome, error) {
	var cr campaignResponse
	req := request{Method: http.MethodPost, Path: r.path(pathCampaign),
		Body: campaignBody(r.h.Candidate, r.ttlSeconds()), Accepted: []int{http.StatusOK}}
	_, f, o, err := r.api.call(d, true, req, func(b []byte) (err error) { cr, err = decodeCampaignResponse(b); return err })
	return cr, f, o, err
}

// retry reports a campaign that did not make us leader and waits before the
// next one (docs/protocol.md "Election hold" step 7), bounded by the
// acquisition deadline; done reports that code is final.
func (r *electionRun) retry(f *Failure, cr campaignResponse, attempt uint32) (code int, done bool, err error) {
	var delay time.Duration
	var reason string
	switch {
	case f == nil: // follower
		delay, reason = guidedWaitDelay(cr.RetryAfterMS, r.h.Jitter()), ReasonFollower
	case f.retryableBeforeAcquire():
		r.diag(f)
		r.unreachableHint(f)
		delay, reason = waitDelay(f, attempt, r.h.Jitter()), f.Code
	default:
		r.diag(f)
		r.em.Emit(events.Error, Fields{Reason: f.Code})
		return f.ExitCode(), true, nil
	}
	d, err := AnnounceRetry(r.em, r.h.Clock, delay, reason)
	if err != nil {
		return 0, true, err
	}
	o, err := r.w.Sleep(r.acq.cap(d), true)
	if err != nil || o == Signalled {
		return r.w.signalExit(), true, err
	}
	return 0, false, nil
}

// lead turns a leader answer into authority (docs/protocol.md "Election hold"
// steps 5–6) — or, when it came too late, for someone else, or past the
// acquisition deadline, resigns it unconfirmed and stops.
func (r *electionRun) lead(start Instant, initial Deadline, cr campaignResponse) (int, error) {
	clock := r.h.Clock
	var reason string
	switch {
	case r.acq.reached(clock):
		if err := r.preAuthorityResign(cr.LeaderToken); err != nil {
			return 0, err
		}
		return r.acquireTimeout(), nil
	case initial.Reached(clock):
		reason = ReasonInitialAuthorityDeadline
	case cr.ElectionID != r.h.ElectionID || cr.Leader.CandidateID != r.h.Candidate:
		reason = reasonAuthorityIdentityMismatch
	}
	var obs AuthorityObservation
	if reason == "" {
		var err error
		obs, err = ObserveAuthority(clock, initial)
		if errors.Is(err, ErrBudgetExhausted) {
			reason = ReasonInitialAuthorityDeadline
		} else if err != nil {
			return 0, err
		}
	}
	if reason != "" {
		if err := r.preAuthorityResign(cr.LeaderToken); err != nil {
			return 0, err
		}
		return r.uncertainPre(reason), nil
	}
	term, exp := cr.Leader.Term, cr.Leader.ExpiresAt
	r.em.Emit(events.Leader, Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
	renewAt, safety, err := RenewalSchedule(start, r.h.TTL, cr.RenewAfterMS, r.h.Jitter())
	if err != nil {
		return 0, err
	}
	t := &electionTerm{r: r, token: cr.LeaderToken, term: term, expires: exp, renewAt: renewAt, safety: safety}
	return t.hold()
}

// resign sends one resign bounded by budget and reports whether it proved that
// term was released (docs/protocol.md "Election hold" shutdown). Signals are
// not watched: once a shutdown attempt starts it completes.
func (r *electionRun) resign(token string, term uint64, budget time.Duration) (bool, error) {
	if budget <= 0 {
		return false, nil
	}
	d, err := within(r.h.Clock, budget)
	if err != nil {
		return false, err
	}
	var rr resignResponse
	req := request{Method: http.MethodPost, Path: r.path(pathResign), Body: resignBody(token), Accepted: []int{http.StatusOK}}
	resp, f, o, err := r.api.call(d, false, req, func(b []byte) (err error) { rr, err = decodeResignResponse(b); return err })
	if err != nil || o != Done {
		return false, err
	}
	if f != nil {
		r.diag(f)
		return false, nil
	}
	return resp.Status == http.StatusOK && rr.ElectionID == r.h.ElectionID && rr.Status == electionVacant && rr.PreviousTerm == term, nil
}

// preAuthorityResign is the bounded, result-ignored resign of
// docs/protocol.md "Election hold" steps 5–6.
func (r *electionRun) preAuthorityResign(token string) error {
	_, err := r.resign(token, 0, min(r.h.ShutdownTimeout, MaxShutdownBudget))
	return err
}

// electionTerm is the hold phase (docs/protocol.md "Election hold" hold
// phase): one term held, renewed until a signal, a loss or its safety
// deadline.
type electionTerm struct {
	r       *electionRun
	token   string
	term    uint64
	expires time.Time
	// renewAt is when the next renewal is due; safety is when authority ends
	// unless a renewal confirms it.
	renewAt, safety Deadline
}

func (t *electionTerm) hold() (int, error) {
	for {
		o, err := t.r.w.Sleep(t.renewAt, true)
		if err != nil {
			return 0, err
		}
		if o == Signalled {
			return t.shutdown()
		}
		if code, done, err := t.renew(); done || err != nil {
			return code, err
		}
	}
}

// renew renews the term, retrying with backoff within the safety deadline;
// done reports that the hold ended with code.
func (t *electionTerm) renew() (code int, done bool, err error) {
	r, clock := t.r, t.r.h.Clock
	for attempt := uint32(0); ; attempt++ {
		if t.safety.Reached(clock) {
			return t.uncertain(), true, nil
		}
		start, err := Now(clock)
		if err != nil {
			return 0, true, err
		}
		var rr campaignResponse
		req := request{Method: http.MethodPost, Path: r.path(pathRenew),
			Body: renewBody(t.token, r.ttlSeconds()), Accepted: []int{http.StatusOK}}
		_, f, o, err := r.api.call(t.safety, true, req, func(b []byte) (err error) { rr, err = decodeCampaignResponse(b); return err })
		if code, done, err := settled(o, err, t.shutdown, t.uncertainErr); done {
			return code, true, err
		}
		switch {
		case t.safety.Reached(clock):
			return t.uncertain(), true, nil
		case f == nil:
			return t.renewed(start, rr)
		case f.provesLoss():
			r.diag(f)
			return t.lost(f.Code), true, nil
		}
		r.diag(f)
		backoff, err := within(clock, BackoffWaitDelay(attempt, r.h.Jitter()))
		if err != nil {
			return 0, true, err
		}
		// The backoff is bounded by authority: the next attempt's safety check
		// ends the hold when it is reached.
		o, err = r.w.Sleep(backoff.Min(t.safety), true)
		if err != nil {
			return 0, true, err
		}
		if o == Signalled {
			code, err := t.shutdown()
			return code, true, err
		}
	}
}

// renewed checks a renewal answer and moves the schedule on from start, the
// renew request's start.
func (t *electionTerm) renewed(start Instant, rr campaignResponse) (int, bool, error) {
	h := t.r.h
	if rr.Status != ElectionStatusLeader || rr.ElectionID != h.ElectionID ||
		rr.Leader.CandidateID != h.Candidate || rr.Leader.Term != t.term {
		return t.lost(ReasonTermChanged), true, nil
	}
	renewAt, safety, err := RenewalSchedule(start, h.TTL, rr.RenewAfterMS, h.Jitter())
	if err != nil {
		return 0, true, err
	}
	t.renewAt, t.safety, t.expires = renewAt, safety, rr.Leader.ExpiresAt
	obs, err := ObserveAuthority(h.Clock, t.safety)
	if errors.Is(err, ErrBudgetExhausted) {
		return t.uncertain(), true, nil
	}
	if err != nil {
		return 0, true, err
	}
	exp := t.expires
	t.r.em.Emit(events.Renewed, Fields{Term: &t.term, ExpiresAt: &exp, Authority: &obs})
	return 0, false, nil
}

func (t *electionTerm) uncertain() int {
	exp := t.expires
	t.r.em.Emit(events.Uncertain, Fields{Term: &t.term, ExpiresAt: &exp, Reason: ReasonRenewalDeadlineExceeded})
	return ExitLost
}

func (t *electionTerm) uncertainErr() (int, error) { return t.uncertain(), nil }

func (t *electionTerm) lost(reason string) int {
	exp := t.expires
	t.r.em.Emit(events.Lost, Fields{Term: &t.term, ExpiresAt: &exp, Reason: reason})
	return ExitLost
}

// shutdown resigns after a signal, within the shutdown budget and the
// remaining authority.
func (t *electionTerm) shutdown() (int, error) {
	r := t.r
	rem, err := t.safety.Remaining(r.h.Clock)
	if err != nil {
		return 0, err
	}
	ok, err := r.resign(t.token, t.term, ShutdownBudget(r.h.ShutdownTimeout, rem))
	if err != nil {
		return 0, err
	}
	if ok {
		r.em.Emit(events.Released, Fields{Term: &t.term, Reason: ReasonSignal})
	} else {
		r.em.Emit(events.Uncertain, Fields{Term: &t.term, Reason: ReasonReleaseUnconfirmed})
	}
	return r.w.signalExit(), nil
}
