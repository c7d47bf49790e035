package events

import "time"

const (
	// WatchdogReserve is kept between the KILL and the true authority expiry;
	// it is also the post-KILL verification window.
	WatchdogReserve = 250 * time.Millisecond
	// MinWorkWindow is the shortest worker run worth starting before the
	// watchdog fires.
	MinWorkWindow = 100 * time.Millisecond
	// MaxBudget bounds authority_remaining_ms: a real hold stays far below it,
	// so anything larger is a hostile or corrupted stream.
	MaxBudget = 300000 * time.Millisecond
)

// Wire length limits, in digits; they bound every later sum well inside int64.
const (
	maxRemainingDigits  = 9
	maxUnixDigits       = 13
	maxContinuousDigits = 15
)

// Clocks is one receipt sample taken by the caller: wall ms since the epoch and
// continuous (suspend-inclusive, e.g. CLOCK_BOOTTIME) ms.
type Clocks struct {
	WallMs       int64
	ContinuousMs int64
}

// Deadline is in continuous-clock milliseconds, the only clock that keeps
// counting across suspend and cannot be stepped.
type Deadline struct {
	FireMs int64
	KillMs int64
}

// Fresh returns what is left of the budget at receipt, F = R - age. The age is
// the larger of the wall and continuous queue ages so that a wall clock stepped
// backwards cannot hide how long the event sat in the pipe. A timestamp in the
// future by even 1 ms means the hold is on another host or boot, so no
// tolerance is given.
func Fresh(a Authority, now Clocks) (time.Duration, error) {
	if digitsOf(a.RemainingDigits, a.RemainingMs) > maxRemainingDigits ||
		digitsOf(a.ObservedUnixDigits, a.ObservedUnixMs) > maxUnixDigits ||
		digitsOf(a.ObservedContinuousDigits, a.ObservedContinuousMs) > maxContinuousDigits {
		return 0, doubt(msgNotFresh)
	}
	r := int64(a.RemainingMs)
	u := int64(a.ObservedUnixMs)
	m := int64(a.ObservedContinuousMs)
	if r <= 0 || r > MaxBudget.Milliseconds() {
		return 0, doubt(msgNotFresh)
	}
	if u > now.WallMs || m > now.ContinuousMs {
		return 0, doubt(msgNotFresh)
	}
	age := max(now.WallMs-u, now.ContinuousMs-m)
	if age >= r {
		return 0, doubt(msgNotFresh)
	}
	return time.Duration(r-age) * time.Millisecond, nil
}

// digitsOf trusts the wire count but never less than the value needs, so an
// Authority built by hand without counts is still length-checked.
func digitsOf(wire int, v uint64) int { return max(wire, decimalLen(v)) }

// Plan turns a fresh budget into a watchdog deadline. The fire time is also
// pinned to M + R - grace - reserve, the instant derived from the hold's own
// emission, so a pause between receipt and arming can never move it later.
// silenceCap <= 0 means no cap (elections).
func Plan(a Authority, now Clocks, grace, silenceCap time.Duration) (Deadline, error) {
	if grace <= 0 {
		return Deadline{}, invalid(msgBadGrace)
	}
	fresh, err := Fresh(a, now)
	if err != nil {
		return Deadline{}, err
	}
	f := fresh.Milliseconds()
	// Rounding grace up and the cap down only ever shortens the work window.
	g := ceilMs(grace)
	reserve := g + WatchdogReserve.Milliseconds()
	if f <= reserve {
		return Deadline{}, doubt(msgNotUsable)
	}
	delay := f - reserve
	if c := silenceCap.Milliseconds(); silenceCap > 0 {
		delay = min(delay, c)
	}
	if delay < MinWorkWindow.Milliseconds() {
		return Deadline{}, doubt(msgNotUsable)
	}
	pinned := int64(a.ObservedContinuousMs) + int64(a.RemainingMs) - reserve
	fire := min(now.ContinuousMs+delay, pinned)
	if fire <= now.ContinuousMs {
		return Deadline{}, doubt(msgNotUsable)
	}
	return Deadline{FireMs: fire, KillMs: fire + g}, nil
}

func ceilMs(d time.Duration) int64 {
	ms := d.Milliseconds()
	if time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	return ms
}
