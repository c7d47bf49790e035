package hold

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// Outcome says what ended a wait.
type Outcome int

const (
	// Done: the work finished before the deadline and before any signal.
	Done Outcome = iota
	// DeadlineReached: the authority deadline was reached first (or the
	// continuous clock could not be read, which proves nothing either).
	DeadlineReached
	// Signalled: SIGINT or SIGTERM arrived, or the context was cancelled
	// (which counts as SIGTERM); Waiter.Signal says which.
	Signalled
)

// timers is implemented by a Clock whose waits must follow it rather than
// the process's real timers: a test clock that moves only when told to fires
// the timers it passes at once, so a test never sleeps for a deadline its
// clock has already reached. A Clock without it gets real timers (wakeBy).
type timers interface {
	// NewTimer returns a channel that receives once d has passed, and a
	// function that stops the timer. Firing early is allowed: every wait
	// re-reads the clock when its timer fires.
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}

// Waiter is the one way a hold waits (docs/protocol.md "Authority deadline"):
// until an authority deadline on both clocks, woken by the continuous clock
// too (wakeBy) so a suspend that stops the scheduler clock still ends the
// wait on time, racing SIGINT/SIGTERM and the run's context. Every
// state machine of every authority, and watch, waits through it, so the rule
// "a wait never outlasts authority" is written once.
//
// A Waiter belongs to one run and is not safe for concurrent use.
type Waiter struct {
	// Clock is the run's clock; deadlines are read on it, never on time.Now.
	Clock Clock
	// Signals delivers SIGINT/SIGTERM; a watching wait ends on one.
	Signals <-chan os.Signal
	// Ctx is the run's lifetime; its cancellation counts as SIGTERM.
	Ctx context.Context
	// Signal is the signal that ended the last Signalled wait.
	Signal os.Signal
}

// signalExit is the exit status for the signal that ended the last
// Signalled wait: 143 for SIGTERM (and a cancelled context), 130 for SIGINT
// and anything else.
func (w *Waiter) signalExit() int {
	if w.Signal == syscall.SIGTERM {
		return ExitSIGTERM
	}
	return ExitSIGINT
}

// Sleep waits until d is reached. With watch false, signals and the context
// are left pending for a later wait: a shutdown step that has begun is not
// interrupted by a second signal.
func (w *Waiter) Sleep(d Deadline, watch bool) (Outcome, error) {
	o, _, err := Await(w, d, watch, nil, (func(context.Context) struct{})(nil))
	return o, err
}

// sleepFor is Sleep until d from now.
func (w *Waiter) sleepFor(d time.Duration, watch bool) (Outcome, error) {
	dl, err := within(w.Clock, d)
	if err != nil {
		return DeadlineReached, err
	}
	return w.Sleep(dl, watch)
}

// AnnounceRetry fixes the retry's deadline, delay from now, and only then
// reports it in a waiting event (retry_after_ms). The deadline comes first
// because the write can block (a slow reader of stdout) and must not push the
// retry past what the line announced, and because whoever acts on the line (a
// test moving a manual clock) must find the deadline already fixed.
func AnnounceRetry(em *Emitter, c Clock, delay time.Duration, reason string) (Deadline, error) {
	d, err := within(c, delay)
	if err != nil {
		return Deadline{}, err
	}
	ms := uint64(delay / time.Millisecond)
	em.Emit(events.Waiting, Fields{RetryAfter: &ms, Reason: reason})
	return d, nil
}

// within is the deadline d (negative counts as zero) after now on both of
// c's clocks.
func within(c Clock, d time.Duration) (Deadline, error) {
	now, err := Now(c)
	if err != nil {
		return Deadline{}, err
	}
	return now.After(max(d, 0))
}

// Await runs op in its own goroutine, bounded end to end by d, and returns
// its result when it finishes first (Done). When the deadline or a watched
// signal comes first, op's context is cancelled and the zero T is returned.
//
// What happens to the cancelled op depends on abandoned, because two kinds of
// work are awaited:
//
//   - abandoned nil: op honours its context, as an HTTP request does
//     (net/http returns promptly once the context is cancelled). Await waits
//     for it to return, so when the hold sends its next request (a resign, a
//     release, a session DELETE) or returns, nothing of the cancelled one is
//     still running on the client: requests never overlap, and no goroutine
//     outlives the run.
//   - abandoned set: op may ignore its context (a lock on a hung file
//     system, which no one can interrupt). Await returns at once, so the
//     hung call cannot stretch authority, and abandoned receives op's result
//     whenever op returns, to release whatever it acquired.
//
// A nil op waits for d alone.
func Await[T any](w *Waiter, d Deadline, watch bool, abandoned func(T), op func(context.Context) T) (Outcome, T, error) {
	var zero T
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan T, 1)
	if op != nil {
		go func() { results <- op(ctx) }()
	}
	stop := func(o Outcome, err error) (Outcome, T, error) {
		cancel()
		switch {
		case op == nil:
		case abandoned == nil:
			<-results
		default:
			go func() { abandoned(<-results) }()
		}
		return o, zero, err
	}
	sigs, done := w.Signals, w.doneChan()
	if !watch {
		sigs, done = nil, nil
	}
	for {
		rem, err := d.Remaining(w.Clock)
		if err != nil || rem == 0 {
			return stop(DeadlineReached, err)
		}
		// Without a deadline there is no suspend to notice: nothing to wake for.
		fired, stopTimer := (<-chan time.Time)(nil), func() bool { return false }
		if d != forever {
			fired, stopTimer = wakeBy(w.Clock, d, rem)
		}
		select {
		case res := <-results:
			stopTimer()
			cancel()
			return Done, res, nil
		case s := <-sigs:
			stopTimer()
			w.Signal = s
			return stop(Signalled, nil)
		case <-done:
			stopTimer()
			w.Signal = syscall.SIGTERM
			return stop(Signalled, nil)
		case <-fired:
			stopTimer() // a continuous alarm holds a descriptor until stopped
		}
	}
}

// forever is a deadline no wait reaches: for a wait bounded only by signals
// and the work itself (a watch stream).
var forever = Deadline{Scheduler: time.Unix(1<<62, 0), ContinuousMS: continuousNever}

func (w *Waiter) doneChan() <-chan struct{} {
	if w.Ctx == nil {
		return nil
	}
	return w.Ctx.Done()
}

// settled ends the hold when a bounded step did not finish: a clock error
// ends it with that error, a signal with onSignal (the phase's shutdown), a
// reached deadline with onDeadline — or, when onDeadline is nil, not at all:
// the caller goes on and its next deadline check reports it.
func settled(o Outcome, err error, onSignal, onDeadline func() (int, error)) (code int, done bool, _ error) {
	switch {
	case err != nil:
		return 0, true, err
	case o == Signalled:
		code, err := onSignal()
		return code, true, err
	case o == DeadlineReached && onDeadline != nil:
		code, err := onDeadline()
		return code, true, err
	}
	return 0, false, nil
}
