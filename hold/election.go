package hold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// Reason codes the election hold itself produces (docs/protocol.md "Events").
const (
	ReasonFollower                  = "follower"
	ReasonAcquireTimeout            = "acquire_timeout"
	ReasonInitialAuthorityDeadline  = "initial_authority_deadline_exceeded"
	ReasonAuthorityIdentityMismatch = "authority_identity_mismatch"
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

// ElectionHold is `octostore election hold --json`
// (docs/protocol.md "Election hold"). All fields are inputs; validation
// (docs/protocol.md "Local validation") is the caller's job.
type ElectionHold struct {
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

// outcome of a bounded request or wait.
type outcome int

const (
	outDone outcome = iota
	outDeadline
	outSignal
)

// runState is one Run's mutable state.
type runState struct {
	h       *ElectionHold
	ctx     context.Context
	signals <-chan os.Signal
	em      *Emitter
	sig     os.Signal // the signal that ended a wait or request
	// transportErrors counts the campaign's transport errors (unreachableHint).
	transportErrors int
}

// Run executes the hold and returns the exit status
// (docs/protocol.md "Exit codes"): 11, 20, 64, 70, 130 or 143; never 0. A value
// on signals is SIGINT/SIGTERM (anything other than syscall.SIGTERM counts as
// SIGINT); cancelling ctx is treated as SIGTERM. Only one Run may use a given
// ElectionHold at a time.
func (h *ElectionHold) Run(ctx context.Context, signals <-chan os.Signal) int {
	defaults(&h.Clock, &h.Jitter, &h.Diag)
	clock := h.Clock
	cand := h.Candidate
	r := &runState{h: h, ctx: ctx, signals: signals, em: &Emitter{
		out: h.Out, clock: clock, kind: events.Election, name: h.ElectionID,
		server: h.Client.Server().URL, candidate: &cand,
	}}
	if h.Out == nil {
		r.em.out = io.Discard
	}
	code, err := r.run()
	if err != nil {
		// Only clock failures get here (unsupported OS clock, overflow).
		fmt.Fprintf(h.Diag, "octostore: %v\n", err)
		return ExitSoftware
	}
	return code
}

func (r *runState) diag(f *Failure) { fmt.Fprintf(r.h.Diag, "octostore: %s\n", f.Diagnostic()) }

// unreachableHint counts a campaign's transport errors and, at the
// unreachableHintAfter-th against the default server, says once why the hold
// keeps waiting and what serves one machine without a network.
func (r *runState) unreachableHint(f *Failure) {
	if f.Code != CodeTransportError {
		return
	}
	r.transportErrors++
	if r.h.DefaultServer && r.transportErrors == unreachableHintAfter {
		fmt.Fprintf(r.h.Diag, "octostore: cannot reach the default hosted authority %s (%d attempts failed); still retrying. For contenders on one machine use --server local\n",
			r.h.Client.Server().URL, r.transportErrors)
	}
}

func (r *runState) signalExit() int {
	if r.sig == syscall.SIGTERM {
		return ExitSIGTERM
	}
	return ExitSIGINT
}

// schedulerDeadline is a deadline on the scheduler clock only (the
// acquisition deadline of docs/protocol.md "Election hold" step 1).
func schedulerDeadline(t time.Time) Deadline {
	return Deadline{Scheduler: t, ContinuousMS: continuousNever}
}

func (r *runState) path(suffix string) string {
	return "/elections/" + EncodeSegment(r.h.ElectionID) + suffix
}

func (r *runState) ttlSeconds() uint64 { return uint64(r.h.TTL / time.Second) }

// wait sleeps until d is reached, polling at most every AuthorityPoll so a
// suspend is noticed (docs/protocol.md "Authority deadline"). It returns
// outSignal (r.sig set) when a signal arrives first (when watchSignals), else
// outDeadline.
func (r *runState) wait(d Deadline, watchSignals bool) (outcome, error) {
	sigs := r.signals
	done := r.ctx.Done()
	if !watchSignals {
		sigs, done = nil, nil
	}
	for {
		rem, err := d.Remaining(r.h.Clock)
		if err != nil {
			return outDeadline, err
		}
		if rem == 0 {
			return outDeadline, nil
		}
		t := time.NewTimer(min(rem, AuthorityPoll))
		select {
		case s := <-sigs:
			t.Stop()
			r.sig = s
			return outSignal, nil
		case <-done:
			t.Stop()
			r.sig = syscall.SIGTERM
			return outSignal, nil
		case <-t.C:
		}
	}
}

type callResult struct {
	resp Response
	err  error
}

// call performs req bounded end to end by the authority deadline d, racing
// it against ≤100 ms polls of both clocks and (when watchSignals) against
// signals. On outDeadline or outSignal the request is cancelled and awaited,
// and its result discarded. On outDone, err is nil or a *Failure.
func (r *runState) call(d Deadline, watchSignals bool, req Request, decode func([]byte) error) (Response, *Failure, outcome, error) {
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan callResult, 1)
	go func() {
		resp, err := r.h.Client.Call(cctx, req, decode)
		results <- callResult{resp, err}
	}()
	abort := func(o outcome) (Response, *Failure, outcome, error) {
		cancel()
		<-results
		return Response{}, nil, o, nil
	}
	sigs := r.signals
	done := r.ctx.Done()
	if !watchSignals {
		sigs, done = nil, nil
	}
	for {
		rem, err := d.Remaining(r.h.Clock)
		if err != nil {
			cancel()
			<-results
			return Response{}, nil, outDeadline, err
		}
		if rem == 0 {
			return abort(outDeadline)
		}
		t := time.NewTimer(min(rem, AuthorityPoll))
		select {
		case res := <-results:
			t.Stop()
			if res.err != nil {
				var f *Failure
				if !errors.As(res.err, &f) {
					f = transportFailure(res.err)
				}
				return Response{}, f, outDone, nil
			}
			return res.resp, nil, outDone, nil
		case s := <-sigs:
			t.Stop()
			r.sig = s
			return abort(outSignal)
		case <-done:
			t.Stop()
			r.sig = syscall.SIGTERM
			return abort(outSignal)
		case <-t.C:
		}
	}
}

func (r *runState) campaign(d Deadline) (CampaignResponse, *Failure, outcome, error) {
	var cr CampaignResponse
	req := Request{Method: http.MethodPost, Path: r.path(pathCampaign),
		Body: campaignBody(r.h.Candidate, r.ttlSeconds()), Accepted: []int{http.StatusOK}}
	_, f, o, err := r.call(d, true, req, func(b []byte) (err error) { cr, err = DecodeCampaignResponse(b); return err })
	return cr, f, o, err
}

// resign sends one resign bounded by budget and reports whether it proved that
// term was released (docs/protocol.md "Election hold" shutdown). Signals are
// not watched: once a shutdown attempt starts it completes.
func (r *runState) resign(token string, term uint64, budget time.Duration) (bool, error) {
	if budget <= 0 {
		return false, nil
	}
	start, err := Now(r.h.Clock)
	if err != nil {
		return false, err
	}
	d, err := start.After(budget)
	if err != nil {
		return false, err
	}
	var rr ResignResponse
	req := Request{Method: http.MethodPost, Path: r.path(pathResign), Body: resignBody(token), Accepted: []int{http.StatusOK}}
	resp, f, o, err := r.call(d, false, req, func(b []byte) (err error) { rr, err = DecodeResignResponse(b); return err })
	if err != nil || o != outDone {
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
func (r *runState) preAuthorityResign(token string) error {
	_, err := r.resign(token, 0, min(r.h.ShutdownTimeout, MaxShutdownBudget))
	return err
}

func (r *runState) run() (int, error) {
	h := r.h
	clock := h.Clock
	var acq *Deadline
	if h.AcquireTimeout != nil {
		d := schedulerDeadline(clock.Scheduler().Add(*h.AcquireTimeout))
		acq = &d
	}
	acqReached := func() bool { return acq != nil && acq.Reached(clock) }
	acquireTimeout := func() int {
		r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
		return ExitAcquireTimeout
	}
	uncertainPre := func(reason string) int {
		r.em.Emit(events.Uncertain, Fields{Reason: reason})
		return ExitLost
	}
	// sleepPre waits for delay, bounded by the acquisition budget; true means
	// a signal arrived.
	sleepPre := func(delay time.Duration) (bool, error) {
		start, err := Now(clock)
		if err != nil {
			return false, err
		}
		d, err := start.After(delay)
		if err != nil {
			return false, err
		}
		if acq != nil {
			d = d.Min(*acq)
		}
		o, err := r.wait(d, true)
		return o == outSignal, err
	}

	var attempt uint32
	for ; ; attempt++ {
		if acqReached() {
			return acquireTimeout(), nil
		}
		start, err := Now(clock)
		if err != nil {
			return 0, err
		}
		initial, err := start.After(SafetyDuration(h.TTL))
		if err != nil {
			return 0, err
		}
		bound := initial
		if acq != nil {
			bound = bound.Min(*acq)
		}
		cr, f, o, err := r.campaign(bound)
		if err != nil {
			return 0, err
		}
		switch o {
		case outSignal:
			return r.signalExit(), nil
		case outDeadline:
			if acq != nil && !acq.Scheduler.After(initial.Scheduler) {
				return acquireTimeout(), nil
			}
			return uncertainPre(ReasonInitialAuthorityDeadline), nil
		}
		isLeader := f == nil && cr.Status == ElectionStatusLeader
		if acqReached() {
			if isLeader {
				if err := r.preAuthorityResign(cr.LeaderToken); err != nil {
					return 0, err
				}
			}
			return acquireTimeout(), nil
		}
		if isLeader {
			if initial.Reached(clock) {
				if err := r.preAuthorityResign(cr.LeaderToken); err != nil {
					return 0, err
				}
				return uncertainPre(ReasonInitialAuthorityDeadline), nil
			}
			if cr.ElectionID != h.ElectionID || cr.Leader.CandidateID != h.Candidate {
				if err := r.preAuthorityResign(cr.LeaderToken); err != nil {
					return 0, err
				}
				return uncertainPre(ReasonAuthorityIdentityMismatch), nil
			}
			obs, err := ObserveAuthority(clock, initial)
			if errors.Is(err, ErrBudgetExhausted) {
				if err := r.preAuthorityResign(cr.LeaderToken); err != nil {
					return 0, err
				}
				return uncertainPre(ReasonInitialAuthorityDeadline), nil
			}
			if err != nil {
				return 0, err
			}
			term, exp := cr.Leader.Term, cr.Leader.ExpiresAt
			r.em.Emit(events.Leader, Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
			return r.holdPhase(start, cr)
		}
		var delay time.Duration
		var reason string
		switch {
		case f == nil: // follower
			delay, reason = GuidedWaitDelay(cr.RetryAfterMS, h.Jitter()), ReasonFollower
		case f.RetryableBeforeAcquire():
			r.diag(f)
			r.unreachableHint(f)
			delay, reason = WaitDelay(f, attempt, h.Jitter()), f.Code
		default:
			r.diag(f)
			r.em.Emit(events.Error, Fields{Reason: f.Code})
			return f.ExitCode(), nil
		}
		ms := uint64(delay / time.Millisecond)
		r.em.Emit(events.Waiting, Fields{RetryAfter: &ms, Reason: reason})
		signalled, err := sleepPre(delay)
		if err != nil {
			return 0, err
		}
		if signalled {
			return r.signalExit(), nil
		}
	}
}

// holdPhase renews until a signal, a loss or the safety deadline
// (docs/protocol.md "Election hold" hold phase). start is the campaign
// request's start.
func (r *runState) holdPhase(start Instant, cr CampaignResponse) (int, error) {
	h := r.h
	clock := h.Clock
	token, term, expires := cr.LeaderToken, cr.Leader.Term, cr.Leader.ExpiresAt
	renewAt, safety, err := RenewalSchedule(start, h.TTL, cr.RenewAfterMS, h.Jitter())
	if err != nil {
		return 0, err
	}
	uncertainHeld := func() int {
		exp := expires
		r.em.Emit(events.Uncertain, Fields{Term: &term, ExpiresAt: &exp, Reason: ReasonRenewalDeadlineExceeded})
		return ExitLost
	}
	lost := func(reason string) int {
		exp := expires
		r.em.Emit(events.Lost, Fields{Term: &term, ExpiresAt: &exp, Reason: reason})
		return ExitLost
	}
	shutdown := func() (int, error) {
		rem, err := safety.Remaining(clock)
		if err != nil {
			return 0, err
		}
		ok, err := r.resign(token, term, ShutdownBudget(h.ShutdownTimeout, rem))
		if err != nil {
			return 0, err
		}
		if ok {
			r.em.Emit(events.Released, Fields{Term: &term, Reason: ReasonSignal})
		} else {
			r.em.Emit(events.Uncertain, Fields{Term: &term, Reason: ReasonReleaseUnconfirmed})
		}
		return r.signalExit(), nil
	}
	for {
		o, err := r.wait(renewAt, true)
		if err != nil {
			return 0, err
		}
		if o == outSignal {
			return shutdown()
		}
	retry:
		for attempt := uint32(0); ; attempt++ {
			if safety.Reached(clock) {
				return uncertainHeld(), nil
			}
			s2, err := Now(clock)
			if err != nil {
				return 0, err
			}
			var rr CampaignResponse
			req := Request{Method: http.MethodPost, Path: r.path(pathRenew),
				Body: renewBody(token, r.ttlSeconds()), Accepted: []int{http.StatusOK}}
			_, f, o, err := r.call(safety, true, req, func(b []byte) (err error) { rr, err = DecodeCampaignResponse(b); return err })
			if err != nil {
				return 0, err
			}
			switch o {
			case outSignal:
				return shutdown()
			case outDeadline:
				return uncertainHeld(), nil
			}
			if safety.Reached(clock) {
				return uncertainHeld(), nil
			}
			switch {
			case f == nil:
				if rr.Status != ElectionStatusLeader || rr.ElectionID != h.ElectionID ||
					rr.Leader.CandidateID != h.Candidate || rr.Leader.Term != term {
					return lost(ReasonTermChanged), nil
				}
				newRenewAt, newSafety, err := RenewalSchedule(s2, h.TTL, rr.RenewAfterMS, h.Jitter())
				if err != nil {
					return 0, err
				}
				renewAt, safety, expires = newRenewAt, newSafety, rr.Leader.ExpiresAt
				obs, err := ObserveAuthority(clock, safety)
				if errors.Is(err, ErrBudgetExhausted) {
					return uncertainHeld(), nil
				}
				if err != nil {
					return 0, err
				}
				exp := expires
				r.em.Emit(events.Renewed, Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
				break retry
			case f.ProvesLoss():
				r.diag(f)
				return lost(f.Code), nil
			default:
				r.diag(f)
				bs, err := Now(clock)
				if err != nil {
					return 0, err
				}
				d, err := bs.After(BackoffWaitDelay(attempt, h.Jitter()))
				if err != nil {
					return 0, err
				}
				o, err := r.wait(d.Min(safety), true)
				if err != nil {
					return 0, err
				}
				if o == outSignal {
					return shutdown()
				}
			}
		}
	}
}
