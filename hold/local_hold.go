package hold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/internal/procid"
	"github.com/octostore-supervisor/supervisor/platform"
)

// LocalElectionHold is `octostore election hold --server local|file://…`: it
// campaigns by polling an exclusive lock on the room's file and prints the
// same events as ElectionHold (waiting once, leader, renewed, and one of
// released, lost, uncertain or error).
type LocalElectionHold struct {
	Store  *LocalStore
	Clock  Clock
	Jitter Jitter
	// ElectionID is the room, Candidate the --candidate value (validated by
	// the caller).
	ElectionID, Candidate string
	// TTL is --ttl (5–300 s): the authority budget is 0.8 × TTL from each
	// acquisition or renewal, and renewals come every TTL/2 (earlier jitter).
	TTL time.Duration
	// AcquireTimeout is --acquire-timeout: nil = wait forever.
	AcquireTimeout *time.Duration
	// ShutdownTimeout bounds the release after a signal (also capped at 2 s
	// and the remaining authority); 0 means 2 s.
	ShutdownTimeout time.Duration
	// PollInterval is how often a waiting candidate retries; 0 means
	// DefaultLocalPollInterval.
	PollInterval time.Duration
	Out, Diag    io.Writer
}

// LocalLockHold is `octostore lock hold --server local|file://…`. There is
// no bearer token: access is governed by the state directory's permissions.
// term (the fencing token) comes from the same counter as election terms.
type LocalLockHold struct {
	Store  *LocalStore
	Clock  Clock
	Jitter Jitter
	Name   string
	// TTL is --ttl (1–3600 s), reported in expires_at. As with the HTTP lock
	// hold, whose session bound caps the budget at 0.8 × 30 s, the budget is
	// 0.8 × min(TTL, 30 s) and renewals come every min(TTL, 30 s)/2.
	TTL             time.Duration
	AcquireTimeout  *time.Duration
	ShutdownTimeout time.Duration
	PollInterval    time.Duration
	Out, Diag       io.Writer
}

// Run executes the hold; see Holder.
func (h *LocalElectionHold) Run(ctx context.Context, signals <-chan os.Signal) int {
	cand := h.Candidate
	return (&localRun{
		store: h.Store, clock: h.Clock, jitter: h.Jitter, kind: KindElection, name: h.ElectionID,
		candidate: &cand, ttl: h.TTL, budgetTTL: h.TTL, acquireTimeout: h.AcquireTimeout,
		shutdownTimeout: h.ShutdownTimeout, poll: h.PollInterval, out: h.Out, diagOut: h.Diag,
		waitingReason: ReasonFollower, lostToOther: ReasonTermChanged,
	}).start(ctx, signals)
}

// Run executes the hold; see Holder.
func (h *LocalLockHold) Run(ctx context.Context, signals <-chan os.Signal) int {
	return (&localRun{
		store: h.Store, clock: h.Clock, jitter: h.Jitter, kind: KindLock, name: h.Name,
		ttl: h.TTL, budgetTTL: min(h.TTL, LockSessionTTL), acquireTimeout: h.AcquireTimeout,
		shutdownTimeout: h.ShutdownTimeout, poll: h.PollInterval, out: h.Out, diagOut: h.Diag,
		waitingReason: ReasonHeld, lostToOther: ReasonLeaseChanged,
	}).start(ctx, signals)
}

// localRun is one run of either local hold.
type localRun struct {
	store           *LocalStore
	clock           Clock
	jitter          Jitter
	kind            Kind
	name            string
	candidate       *string
	ttl, budgetTTL  time.Duration
	acquireTimeout  *time.Duration
	shutdownTimeout time.Duration
	poll            time.Duration
	out, diagOut    io.Writer
	waitingReason   string
	lostToOther     string

	ctx     context.Context
	signals <-chan os.Signal
	sig     os.Signal
	em      *Emitter
	paths   localPaths
	holder  string
	self    procid.ID // this process, as the holder record names it
}

// diag prints one stderr line; paths with control characters stay one line.
func (r *localRun) diag(format string, args ...any) {
	fmt.Fprintf(r.diagOut, "octostore: %s\n", TerminalSafe(fmt.Sprintf(format, args...)))
}

func (r *localRun) start(ctx context.Context, signals <-chan os.Signal) int {
	defaults(&r.clock, &r.jitter, &r.diagOut, &r.out)
	if r.poll <= 0 {
		r.poll = DefaultLocalPollInterval
	}
	if r.shutdownTimeout <= 0 {
		r.shutdownTimeout = MaxShutdownBudget
	}
	if r.store == nil {
		r.diag("no local state directory was opened")
		return ExitSoftware
	}
	esc, err := escapeLocalName(r.name)
	if err != nil {
		r.diag("%v", err)
		return ExitUsage
	}
	ek := events.Election
	if r.kind == KindLock {
		ek = events.Lock
	}
	r.ctx, r.signals, r.paths = ctx, signals, pathsFor(r.kind, esc)
	if err := r.store.checkNameEntries(r.paths); err != nil {
		r.diag("%v", err)
		return ExitUsage
	}
	r.em = &Emitter{out: r.out, clock: r.clock, kind: ek, name: r.name, server: r.store.Server(), candidate: r.candidate}
	if r.holder, err = newHolderID(); err != nil {
		r.diag("%v", err)
		return ExitSoftware
	}
	// Without a start time (an OS procid cannot read it on) the record names
	// the pid alone, as records always did.
	r.self, _ = procid.Self()
	r.self.Pid = os.Getpid()
	code, err := r.run()
	if err != nil {
		// Only clock failures get here (unsupported OS clock, overflow).
		r.diag("%v", err)
		return ExitSoftware
	}
	return code
}

func (r *localRun) signalExit() int {
	if r.sig == syscall.SIGTERM {
		return ExitSIGTERM
	}
	return ExitSIGINT
}

// localOp is work on the file system that a deadline may abandon. It sets
// its results in variables the caller reads only after outDone; undo (may be
// nil) releases what it acquired and runs instead if the result is abandoned.
// stop is closed on abandonment so loops inside op can end.
type localOp func(stop <-chan struct{}) (undo func(), err error)

// do runs op bounded end to end by d, racing it against ≤100 ms polls of both
// clocks (docs/protocol.md "Authority deadline") and, when watchSignals,
// against signals: the local analogue of a bounded request, so a hung file
// system cannot stretch authority.
func (r *localRun) do(d Deadline, watchSignals bool, op localOp) (outcome, error, error) {
	type result struct {
		undo func()
		err  error
	}
	stop := make(chan struct{})
	results := make(chan result, 1)
	go func() {
		u, err := op(stop)
		results <- result{u, err}
	}()
	abandon := func() {
		close(stop)
		go func() {
			if res := <-results; res.undo != nil {
				res.undo()
			}
		}()
	}
	sigs, done := r.signals, r.ctx.Done()
	if !watchSignals {
		sigs, done = nil, nil
	}
	for {
		rem, err := d.Remaining(r.clock)
		if err != nil {
			abandon()
			return outDeadline, nil, err
		}
		if rem == 0 {
			abandon()
			return outDeadline, nil, nil
		}
		t := time.NewTimer(min(rem, AuthorityPoll))
		select {
		case res := <-results:
			t.Stop()
			return outDone, res.err, nil
		case s := <-sigs:
			t.Stop()
			r.sig = s
			abandon()
			return outSignal, nil, nil
		case <-done:
			t.Stop()
			r.sig = syscall.SIGTERM
			abandon()
			return outSignal, nil, nil
		case <-t.C:
		}
	}
}

// sleepUntil waits for d, polling ≤100 ms so a suspend is noticed; true means
// a signal (or ctx) ended it.
func (r *localRun) sleepUntil(d Deadline) (bool, error) {
	for {
		rem, err := d.Remaining(r.clock)
		if err != nil {
			return false, err
		}
		if rem == 0 {
			return false, nil
		}
		t := time.NewTimer(min(rem, AuthorityPoll))
		select {
		case s := <-r.signals:
			t.Stop()
			r.sig = s
			return true, nil
		case <-r.ctx.Done():
			t.Stop()
			r.sig = syscall.SIGTERM
			return true, nil
		case <-t.C:
		}
	}
}

func (r *localRun) within(d time.Duration) (Deadline, error) {
	now, err := Now(r.clock)
	if err != nil {
		return Deadline{}, err
	}
	return now.After(max(d, 0))
}

type acquireState int

const (
	acquireBusy acquireState = iota
	acquireDeferred
	acquireOK
)

// tryAcquire takes the name's lock without waiting. It returns acquireBusy
// when another process holds it, and acquireDeferred when it got the lock but
// the record names a previous holder that is still alive and whose lease has
// not expired: then the lock file was deleted or replaced under that holder,
// which keeps believing it leads until its next renewal, so we must not lead
// before its lease is over. (A holder that died is dead by procid's test — a
// zombie not yet reaped by a slow PID 1, or a pid now reused by another
// process, included: immediate hand-over.)
func (r *localRun) tryAcquire() (*os.File, acquireState, error) {
	for range 3 {
		// Read-write: the holder copies its term into the lock file.
		f, err := r.store.createOrOpen(r.paths.lock, os.O_RDWR)
		if err != nil {
			return nil, acquireBusy, fmt.Errorf("open %s: %w", r.store.join(r.paths.lock), err)
		}
		ok, err := platform.TryLockFile(f, true)
		if err != nil || !ok {
			f.Close()
			if err != nil {
				return nil, acquireBusy, fmt.Errorf("lock %s: %w", r.store.join(r.paths.lock), err)
			}
			return nil, acquireBusy, nil
		}
		same, err := r.stillAtPath(f)
		if err != nil {
			f.Close()
			return nil, acquireBusy, err
		}
		if !same {
			// Deleted or replaced between our open and our lock: the file we
			// locked guards nothing any more. Take the one now at the path.
			f.Close()
			continue
		}
		rec, err := r.store.readRecord(r.paths.record)
		if err == nil && rec.Holder != r.holder && rec.holderProcess().Alive() && rec.ExpiresAt.After(r.clock.Wall()) {
			f.Close()
			return nil, acquireDeferred, nil
		}
		return f, acquireOK, nil
	}
	return nil, acquireBusy, nil
}

// stillAtPath reports whether f, which we locked, is still the file at the
// lock path: linked, and the same file (device and inode, or volume serial
// and file index on Windows) as a fresh lstat of the path.
func (r *localRun) stillAtPath(f *os.File) (bool, error) {
	links, err := fileLinks(f)
	if err != nil {
		return false, fmt.Errorf("inspect locked %s: %w", r.store.join(r.paths.lock), err)
	}
	if links == 0 {
		return false, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("inspect locked %s: %w", r.store.join(r.paths.lock), err)
	}
	pfi, err := r.store.root.Lstat(r.paths.lock)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", r.store.join(r.paths.lock), err)
	}
	return os.SameFile(fi, pfi), nil
}

// prove re-establishes ownership at a renewal (and before a release): the
// locked file is still the one at the path and the holder record is still
// ours. A *lostError says which proof failed; any other error is a failure to
// check (retried until the safety deadline).
func (r *localRun) prove(f *os.File, term uint64) error {
	same, err := r.stillAtPath(f)
	if err != nil {
		return err
	}
	if !same {
		if _, err := r.store.root.Lstat(r.paths.lock); errors.Is(err, fs.ErrNotExist) {
			return &lostError{reason: reasonLockGone, what: "lock file " + r.store.join(r.paths.lock) + " was deleted"}
		}
		return &lostError{reason: reasonLockGone, what: "lock file " + r.store.join(r.paths.lock) + " was replaced"}
	}
	rec, err := r.store.readRecord(r.paths.record)
	if errors.Is(err, fs.ErrNotExist) {
		return &lostError{reason: reasonLockGone, what: "holder record " + r.store.join(r.paths.record) + " was deleted"}
	}
	if err != nil {
		return err
	}
	if rec.Holder != r.holder || rec.Term != term {
		return &lostError{reason: r.lostToOther, what: "holder record " + r.store.join(r.paths.record) + " names another holder"}
	}
	return nil
}

type lostError struct{ reason, what string }

func (e *lostError) Error() string { return e.what }
func (e *lostError) Unwrap() error { return errLocalLost }

func (r *localRun) record(term uint64, acquired, expires time.Time) localRecord {
	return localRecord{
		Kind: r.kind.String(), Name: r.name, CandidateID: r.candidate, Term: term,
		PID: r.self.Pid, Start: r.self.Start, Holder: r.holder, AcquiredAt: acquired.UTC(), ExpiresAt: expires.UTC(),
	}
}

// releaseFile removes our record (only while we still hold the lock, so it
// cannot be a successor's) and then drops the lock.
func (r *localRun) releaseFile(f *os.File, term uint64) error {
	defer f.Close()
	if err := r.prove(f, term); err != nil {
		return err
	}
	if err := r.store.removeFile(r.paths.record); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", r.store.join(r.paths.record), err)
	}
	return platform.UnlockFile(f)
}

func (r *localRun) authorityEvent() string {
	if r.kind == KindLock {
		return events.Acquired
	}
	return events.Leader
}

func (r *localRun) run() (int, error) {
	clock := r.clock
	var acq *Deadline
	if r.acquireTimeout != nil {
		acq = &Deadline{Scheduler: clock.Scheduler().Add(*r.acquireTimeout), ContinuousMS: math.MaxInt64}
	}
	acqReached := func() bool { return acq != nil && acq.Reached(clock) }
	acquireTimeout := func() int {
		r.em.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
		return ExitAcquireTimeout
	}
	uncertainPre := func() int {
		r.em.Emit(events.Uncertain, Fields{Reason: ReasonInitialAuthorityDeadline})
		return ExitLost
	}
	waited := false
	for {
		if acqReached() {
			return acquireTimeout(), nil
		}
		start, err := Now(clock)
		if err != nil {
			return 0, err
		}
		initial, err := start.After(SafetyDuration(r.budgetTTL))
		if err != nil {
			return 0, err
		}
		bound := initial
		if acq != nil {
			bound = bound.Min(*acq)
		}
		var (
			lk    *os.File
			state acquireState
			term  uint64
			rec   localRecord
		)
		o, opErr, err := r.do(bound, true, func(stop <-chan struct{}) (func(), error) {
			f, st, err := r.tryAcquire()
			if err != nil || st != acquireOK {
				state = st
				return nil, err
			}
			t, err := r.store.bumpTerm(stop, f, r.paths.lock)
			if err != nil {
				f.Close()
				return nil, err
			}
			// Not fsynced: the counter, synced first, is never below it.
			if err := writeTerm(f, t); err != nil {
				f.Close()
				return nil, fmt.Errorf("write %s: %w", r.store.join(r.paths.lock), err)
			}
			now := clock.Wall()
			rc := r.record(t, now, now.Add(r.ttl))
			if err := r.store.writeRecord(r.paths, rc); err != nil {
				f.Close()
				return nil, fmt.Errorf("write %s: %w", r.store.join(r.paths.record), err)
			}
			lk, state, term, rec = f, acquireOK, t, rc
			return func() { _ = r.releaseFile(f, t) }, nil
		})
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
			return uncertainPre(), nil
		}
		if opErr != nil {
			r.diag("local authority failed: %v", opErr)
			r.em.Emit(events.Error, Fields{Reason: reasonLocalFailure})
			return ExitSoftware, nil
		}
		if state != acquireOK {
			if !waited {
				// One waiting line, not one per poll: the HTTP hold prints one
				// per server answer, which comes every few seconds at most.
				ms := uint64(r.poll / time.Millisecond)
				r.em.Emit(events.Waiting, Fields{RetryAfter: &ms, Reason: r.waitingReason})
				waited = true
			}
			d, err := r.within(r.poll)
			if err != nil {
				return 0, err
			}
			if acq != nil {
				d = d.Min(*acq)
			}
			signalled, err := r.sleepUntil(d)
			if err != nil {
				return 0, err
			}
			if signalled {
				return r.signalExit(), nil
			}
			continue
		}
		// Late successes are not authority (docs/protocol.md "Easy to miss" item 5).
		if acqReached() {
			_ = r.releaseFile(lk, term)
			return acquireTimeout(), nil
		}
		obs, err := ObserveAuthority(clock, initial)
		if errors.Is(err, ErrBudgetExhausted) {
			_ = r.releaseFile(lk, term)
			return uncertainPre(), nil
		}
		if err != nil {
			lk.Close()
			return 0, err
		}
		exp := rec.ExpiresAt
		r.em.Emit(r.authorityEvent(), Fields{Term: &term, ExpiresAt: &exp, Authority: &obs})
		return r.holdPhase(start, lk, rec)
	}
}

// holdPhase renews on the HTTP holds' schedule — renew at budgetTTL/2
// (earlier jitter only), safety = start + 0.8 × budgetTTL, start sampled
// before the proof — until a signal, a loss or the safety deadline.
func (r *localRun) holdPhase(start Instant, lk *os.File, rec localRecord) (int, error) {
	clock := r.clock
	defer lk.Close() // idempotent after releaseFile; ends the OS lock on every exit path
	term, expires := rec.Term, rec.ExpiresAt
	guidance := uint64(r.budgetTTL / 2 / time.Millisecond)
	renewAt, safety, err := RenewalSchedule(start, r.budgetTTL, guidance, r.jitter())
	if err != nil {
		return 0, err
	}
	uncertainHeld := func() int {
		exp := expires
		r.em.Emit(events.Uncertain, Fields{Term: &term, ExpiresAt: &exp, Reason: ReasonRenewalDeadlineExceeded})
		return ExitLost
	}
	lost := func(e *lostError) int {
		r.diag("%s", e.what)
		exp := expires
		r.em.Emit(events.Lost, Fields{Term: &term, ExpiresAt: &exp, Reason: e.reason})
		return ExitLost
	}
	shutdown := func() (int, error) {
		rem, err := safety.Remaining(clock)
		if err != nil {
			return 0, err
		}
		ok := false
		if budget := ShutdownBudget(r.shutdownTimeout, rem); budget > 0 {
			d, err := r.within(budget)
			if err != nil {
				return 0, err
			}
			var relErr error
			o, _, err := r.do(d, false, func(<-chan struct{}) (func(), error) {
				relErr = r.releaseFile(lk, term)
				return nil, nil
			})
			if err != nil {
				return 0, err
			}
			ok = o == outDone && relErr == nil
			if o == outDone && relErr != nil {
				r.diag("release not confirmed: %v", relErr)
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
		signalled, err := r.sleepUntil(renewAt)
		if err != nil {
			return 0, err
		}
		if signalled {
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
			newExpires := clock.Wall().Add(r.ttl).UTC()
			o, opErr, err := r.do(safety, true, func(<-chan struct{}) (func(), error) {
				if err := r.prove(lk, term); err != nil {
					return nil, err
				}
				upd := rec
				upd.ExpiresAt = newExpires
				if err := r.store.writeRecord(r.paths, upd); err != nil {
					return nil, fmt.Errorf("write %s: %w", r.store.join(r.paths.record), err)
				}
				return nil, nil
			})
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
			var le *lostError
			switch {
			case opErr == nil:
				newRenewAt, newSafety, err := RenewalSchedule(s2, r.budgetTTL, guidance, r.jitter())
				if err != nil {
					return 0, err
				}
				renewAt, safety, expires = newRenewAt, newSafety, newExpires
				rec.ExpiresAt = newExpires
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
			case errors.As(opErr, &le):
				return lost(le), nil
			default:
				r.diag("local renewal failed: %v", opErr)
				d, err := r.within(BackoffWaitDelay(attempt, r.jitter()))
				if err != nil {
					return 0, err
				}
				signalled, err := r.sleepUntil(d.Min(safety))
				if err != nil {
					return 0, err
				}
				if signalled {
					return shutdown()
				}
			}
		}
	}
}
