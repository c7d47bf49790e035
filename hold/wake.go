package hold

import (
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// maxAlarmMS is the largest continuous deadline armed on a timer: beyond it
// (continuousNever, a deadline with no continuous part) nanoseconds overflow,
// and the wait samples the clocks as it does without a timerfd.
const maxAlarmMS = 1 << 42 // ~139 years of uptime

// wakeBy returns a channel that receives no later than d is reached on either
// of c's clocks (rem is what is left on the scheduler clock), and a function
// that stops it. Every wait re-reads the clock when it wakes, so waking early
// costs one more turn of its loop, never correctness.
//
//   - A test clock's own timers (timers) are used as they are, and so is the
//     AuthorityPoll sampling every other clock gets: a clock that is neither
//     real nor a test's timer source (one that skews the real one) can only
//     be sampled.
//   - SystemClock on Linux polls nothing: a CLOCK_BOOTTIME timerfd
//     (platform.ContinuousTimer) fires at the continuous deadline even across
//     a suspend, which is all the sampling was for, and a Go timer fires at
//     the scheduler one. An idle hold then wakes when something is due, not
//     ten times a second (the sampling was most of an idle supervised run's
//     CPU: docs/benchmarks.md).
//   - Elsewhere SystemClock is sampled every AuthorityPoll, as the other
//     platforms' continuous timers would poll anyway.
func wakeBy(c Clock, d Deadline, rem time.Duration) (<-chan time.Time, func() bool) {
	if t, ok := c.(timers); ok {
		return t.NewTimer(min(rem, AuthorityPoll))
	}
	if _, ok := c.(SystemClock); ok && continuousAlarms && d.ContinuousMS < maxAlarmMS {
		if ch, stop, err := alarm(d.ContinuousMS, rem); err == nil {
			return ch, stop
		}
		// No timerfd (descriptors exhausted): sample instead, as every
		// other platform does; late by at most AuthorityPoll after a suspend.
	}
	t := time.NewTimer(min(rem, AuthorityPoll))
	return t.C, t.Stop
}

// alarm fires at atMS on the continuous clock or after rem on the scheduler
// clock, whichever comes first. stop releases the timerfd, which also ends
// the goroutine waiting on it.
func alarm(atMS int64, rem time.Duration) (<-chan time.Time, func() bool, error) {
	ct, err := platform.NewContinuousTimer()
	if err != nil {
		return nil, nil, err
	}
	if err := ct.Set(atMS); err != nil {
		ct.Close()
		return nil, nil, err
	}
	fired := make(chan time.Time, 1)
	fire := func() {
		select {
		case fired <- time.Now():
		default:
		}
	}
	go func() {
		if ct.Wait() == nil {
			fire()
		}
	}()
	t := time.AfterFunc(rem, fire)
	return fired, func() bool {
		stopped := t.Stop()
		ct.Close()
		return stopped
	}, nil
}
