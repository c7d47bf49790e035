package hold

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Clock is the time source of the hold (docs/protocol.md "Clocks"). Production
// uses SystemClock; tests substitute a fake so deadline arithmetic is
// deterministic.
type Clock interface {
	// Scheduler is the process monotonic clock (Go's monotonic reading; on
	// Linux CLOCK_MONOTONIC, which stops during suspend).
	Scheduler() time.Time
	// ContinuousMillis is the suspend-inclusive clock in whole milliseconds
	// (CLOCK_BOOTTIME on Linux, CLOCK_MONOTONIC_RAW on macOS,
	// GetTickCount64 on Windows); an error means this OS has none (exit 70).
	ContinuousMillis() (int64, error)
	// Wall is the wall clock, for observed_at and authority_observed_unix_ms.
	Wall() time.Time
}

// SystemClock reads the real clocks through the platform package, which the
// supervisor also uses, so both sides sample the very same clocks.
type SystemClock struct{}

// Scheduler is time.Now: its monotonic reading is the scheduler clock.
func (SystemClock) Scheduler() time.Time { return time.Now() }

// ContinuousMillis is platform.ContinuousMillis, the suspend-inclusive clock.
func (SystemClock) ContinuousMillis() (int64, error) { return platform.ContinuousMillis() }

// Wall is time.Now, for the wall-clock fields of events.
func (SystemClock) Wall() time.Time { return time.Now() }

// Instant is an authority instant: one sample of both clocks.
type Instant struct {
	Scheduler    time.Time
	ContinuousMS int64
}

// Now samples the continuous clock first, then the scheduler: a pause between
// the two can then only shorten budgets computed from the result.
func Now(c Clock) (Instant, error) {
	cont, err := c.ContinuousMillis()
	if err != nil {
		return Instant{}, err
	}
	return Instant{Scheduler: c.Scheduler(), ContinuousMS: cont}, nil
}

// Deadline is an authority deadline: reached when either component is.
type Deadline struct {
	Scheduler    time.Time
	ContinuousMS int64
}

// After is the deadline d after i on both clocks; the continuous part adds d
// floored to whole milliseconds. Overflow is an error (exit 70 upstream).
func (i Instant) After(d time.Duration) (Deadline, error) {
	if d < 0 {
		return Deadline{}, fmt.Errorf("negative authority duration %v", d)
	}
	ms := int64(d / time.Millisecond)
	if i.ContinuousMS > math.MaxInt64-ms {
		return Deadline{}, fmt.Errorf("continuous deadline overflows: %d ms + %v", i.ContinuousMS, d)
	}
	return Deadline{Scheduler: i.Scheduler.Add(d), ContinuousMS: i.ContinuousMS + ms}, nil
}

// remainingAt is min(scheduler remaining, continuous remaining), each
// saturating at zero; zero means the deadline is reached.
func (d Deadline) remainingAt(at Instant) time.Duration {
	sched := d.Scheduler.Sub(at.Scheduler)
	if sched < 0 {
		sched = 0
	}
	contMS := d.ContinuousMS - at.ContinuousMS
	if contMS < 0 {
		contMS = 0
	}
	var cont time.Duration
	if contMS > int64(math.MaxInt64/time.Millisecond) {
		cont = time.Duration(math.MaxInt64)
	} else {
		cont = time.Duration(contMS) * time.Millisecond
	}
	return min(sched, cont)
}

// Remaining samples the clock (scheduler first, then continuous, as upstream's
// remaining() does) and returns remainingAt.
func (d Deadline) Remaining(c Clock) (time.Duration, error) {
	sched := c.Scheduler()
	cont, err := c.ContinuousMillis()
	if err != nil {
		return 0, err
	}
	return d.remainingAt(Instant{Scheduler: sched, ContinuousMS: cont}), nil
}

// Reached reports a zero remaining time; an unreadable continuous clock counts
// as reached, since authority can no longer be proven.
func (d Deadline) Reached(c Clock) bool {
	r, err := d.Remaining(c)
	return err != nil || r == 0
}

// Min is the component-wise minimum of two deadlines.
func (d Deadline) Min(o Deadline) Deadline {
	m := d
	if o.Scheduler.Before(m.Scheduler) {
		m.Scheduler = o.Scheduler
	}
	m.ContinuousMS = min(m.ContinuousMS, o.ContinuousMS)
	return m
}

// noLaterThan compares on the continuous clock only, as upstream does when it
// chooses which of two deadlines explains an uncertainty
// (docs/protocol.md "Lock hold" Phase C).
func (d Deadline) noLaterThan(o Deadline) bool { return d.ContinuousMS <= o.ContinuousMS }

// AuthorityObservation is what an authority event carries
// (docs/protocol.md "Authority budget").
type AuthorityObservation struct {
	// RemainingMS is the floored budget, always > 0.
	RemainingMS int64
	// ObservedAt is the wall sample; its UnixMilli() is
	// authority_observed_unix_ms and it is also observed_at.
	ObservedAt time.Time
	// ContinuousMS is authority_observed_continuous_ms.
	ContinuousMS int64
}

// ErrBudgetExhausted is returned by ObserveAuthority when the budget floors to
// zero: the event must not be emitted and the hold becomes uncertain (exit 20).
var ErrBudgetExhausted = errors.New("authority budget floors to zero")

// ObserveAuthority samples in the upstream order — wall, continuous (the
// transferable observations), then scheduler and continuous again for the
// budget — so a pause anywhere can only shrink the reported budget.
func ObserveAuthority(c Clock, d Deadline) (AuthorityObservation, error) {
	wall := c.Wall()
	observedCont, err := c.ContinuousMillis()
	if err != nil {
		return AuthorityObservation{}, err
	}
	rem, err := d.Remaining(c)
	if err != nil {
		return AuthorityObservation{}, err
	}
	ms := int64(rem / time.Millisecond)
	if ms == 0 {
		return AuthorityObservation{}, ErrBudgetExhausted
	}
	return AuthorityObservation{RemainingMS: ms, ObservedAt: wall, ContinuousMS: observedCont}, nil
}
