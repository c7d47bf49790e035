package hold

import (
	"io"
	"math"
	"math/rand/v2"
	"time"
)

// Timing constants (docs/protocol.md "Constants").
const (
	safetyFraction          = 0.8
	LockSessionTTL          = 30 * time.Second
	MinRetryDelay           = 100 * time.Millisecond
	maxRetryDelay           = 30 * time.Second
	MaxShutdownBudget       = 2 * time.Second
	AuthorityPoll           = 100 * time.Millisecond
	maxSSEFrameBytes        = 64 << 10
	maxJitterBasisPoints    = 1000
	backoffBase             = 500 * time.Millisecond
	backoffMaxDoublingSteps = 5
)

// Jitter yields basis points uniformly in 0..=1000 (up to 10 %). It is a
// parameter everywhere so tests can fix it.
type Jitter func() uint32

// RandomJitter draws from math/rand/v2's process-wide source, which needs no
// seeding and is safe for concurrent use.
func RandomJitter() uint32 { return rand.Uint32N(maxJitterBasisPoints + 1) }

// FixedJitter always returns bp (tests, and callers that already drew one).
func FixedJitter(bp uint32) Jitter { return func() uint32 { return bp } }

// mulF64 is Rust's Duration::mul_f64: the product of the duration in seconds
// and f, rounded to the nearest nanosecond.
func mulF64(d time.Duration, f float64) time.Duration {
	ns := math.Round(d.Seconds() * f * 1e9)
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

func jitterFraction(bp uint32) float64 {
	return float64(min(bp, maxJitterBasisPoints)) / 10_000
}

// laterJitter lengthens base by bp basis points (waits are only ever late).
func laterJitter(base time.Duration, bp uint32) time.Duration {
	return satAdd(base, mulF64(base, jitterFraction(bp)))
}

// earlierJitter shortens base by bp basis points (renewals are only ever
// early).
func earlierJitter(base time.Duration, bp uint32) time.Duration {
	return max(base-mulF64(base, jitterFraction(bp)), 0)
}

func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return time.Duration(math.MaxInt64)
	}
	return a + b
}

// guidanceBase clamps server guidance to 1..=300 000 ms and then to at least
// 100 ms, so a server sending 0 cannot cause a request storm.
func guidanceBase(guidanceMS uint64) time.Duration {
	g := min(max(guidanceMS, 1), maxServerRetryDelayMS)
	return max(time.Duration(g)*time.Millisecond, MinRetryDelay)
}

// guidedWaitDelay is the wait before retrying when the server gave guidance g
// (follower/held/delayed retry_after_ms, or an error body's retry_after_ms):
// never shorter than the guidance and never capped at 30 s
// (docs/protocol.md "Retry and renewal delays").
func guidedWaitDelay(guidanceMS uint64, bp uint32) time.Duration {
	return laterJitter(guidanceBase(guidanceMS), bp)
}

// BackoffWaitDelay is the local exponential backoff for attempt n when there is
// no guidance: 500 ms × 2^min(n,5) within [100 ms, 30 s], jittered later, then
// capped at 30 s (docs/protocol.md "Retry and renewal delays").
func BackoffWaitDelay(attempt uint32, bp uint32) time.Duration {
	base := backoffBase << min(attempt, backoffMaxDoublingSteps)
	base = min(max(base, MinRetryDelay), maxRetryDelay)
	return min(laterJitter(base, bp), maxRetryDelay)
}

// waitDelay chooses between the two after a failure: body guidance when the
// failure carries it, else backoff by attempt.
func waitDelay(f *Failure, attempt uint32, bp uint32) time.Duration {
	if f != nil && f.RetryAfterMS != 0 {
		return guidedWaitDelay(f.RetryAfterMS, bp)
	}
	return BackoffWaitDelay(attempt, bp)
}

// SafetyDuration is 0.8 × ttl, the part of a lease the client trusts.
func SafetyDuration(ttl time.Duration) time.Duration { return mulF64(ttl, safetyFraction) }

// sessionConfirmation returns start + 0.8 × 30 s.
func sessionConfirmation(start Instant) (Deadline, error) {
	return start.After(SafetyDuration(LockSessionTTL))
}

// RenewalSchedule computes, from the start S of the request that produced
// guidance g (renew_after_ms), the time to renew and the safety deadline
// (docs/protocol.md "Retry and renewal delays"):
// renew_at = S + min(max(clamp(g,1,300000) ms, 100 ms), T/2) shortened by bp
// basis points; safety = S + 0.8 × T.
func RenewalSchedule(start Instant, ttl time.Duration, guidanceMS uint64, bp uint32) (renewAt, safety Deadline, err error) {
	g := min(guidanceBase(guidanceMS), ttl/2)
	renewAt, err = start.After(earlierJitter(g, bp))
	if err != nil {
		return Deadline{}, Deadline{}, err
	}
	safety, err = start.After(SafetyDuration(ttl))
	if err != nil {
		return Deadline{}, Deadline{}, err
	}
	return renewAt, safety, nil
}

// ShutdownBudget is min(shutdown-timeout, 2 s, remaining authority), the one
// budget for release (and the lock session DELETE) after a signal
// (docs/protocol.md "Easy to miss" item 12).
func ShutdownBudget(shutdownTimeout, remaining time.Duration) time.Duration {
	return min(shutdownTimeout, MaxShutdownBudget, remaining)
}

// defaults fills in what a caller may leave nil: the system clock, random
// jitter, and writers that discard.
func defaults(c *Clock, j *Jitter, writers ...*io.Writer) {
	if *c == nil {
		*c = SystemClock{}
	}
	if *j == nil {
		*j = RandomJitter
	}
	for _, w := range writers {
		if *w == nil {
			*w = io.Discard
		}
	}
}
