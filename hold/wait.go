package hold

import (
	"context"
	"os"
	"syscall"
	"time"
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

// Waiter is the one way a hold waits (docs/protocol.md "Authority deadline"):
// until an authority deadline on both clocks, sampled at least every
// AuthorityPoll so a suspend that stops the scheduler clock is still noticed
// on the continuous one, racing SIGINT/SIGTERM and the run's context. Every
// state machine of every authority, and watch, waits through it, so the rule
// "a wait never outlasts authority" is written once.
//
// A Waiter belongs to one run and is not safe for concurrent use.
type Waiter struct {
	Clock   Clock
	Signals <-chan os.Signal
	Ctx     context.Context
	// Signal is the signal that ended the last Signalled wait.
	Signal os.Signal
}

// Sleep waits until d is reached. With watch false, signals and the context
// are left pending for a later wait: a shutdown step that has begun is not
// interrupted by a second signal.
func (w *Waiter) Sleep(d Deadline, watch bool) (Outcome, error) {
	o, _, err := Await(w, d, watch, nil, (func(context.Context) struct{})(nil))
	return o, err
}

// Await runs op in its own goroutine, bounded end to end by d, and returns
// its result when it finishes first (Done). When the deadline or a watched
// signal comes first, op's context is cancelled and Await returns at once
// without waiting for op: a hung request or file system cannot stretch
// authority. If op later finishes anyway, abandoned (when not nil) receives
// its result, so whatever op acquired is released. A nil op waits for d alone.
func Await[T any](w *Waiter, d Deadline, watch bool, abandoned func(T), op func(context.Context) T) (Outcome, T, error) {
	var zero T
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan T, 1)
	if op != nil {
		go func() { results <- op(ctx) }()
	}
	abandon := func() {
		cancel()
		if op != nil && abandoned != nil {
			go func() { abandoned(<-results) }()
		}
	}
	sigs, done := w.Signals, w.doneChan()
	if !watch {
		sigs, done = nil, nil
	}
	for {
		rem, err := d.Remaining(w.Clock)
		if err != nil || rem == 0 {
			abandon()
			return DeadlineReached, zero, err
		}
		t := time.NewTimer(min(rem, AuthorityPoll))
		select {
		case res := <-results:
			t.Stop()
			cancel()
			return Done, res, nil
		case s := <-sigs:
			t.Stop()
			w.Signal = s
			abandon()
			return Signalled, zero, nil
		case <-done:
			t.Stop()
			w.Signal = syscall.SIGTERM
			abandon()
			return Signalled, zero, nil
		case <-t.C:
		}
	}
}

func (w *Waiter) doneChan() <-chan struct{} {
	if w.Ctx == nil {
		return nil
	}
	return w.Ctx.Done()
}
