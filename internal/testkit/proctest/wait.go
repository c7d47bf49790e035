package proctest

import (
	"testing"
	"time"
)

// pollMax is the longest pause between two looks at a condition. Polling
// starts at a millisecond and backs off to it, so a condition that is about
// to hold is seen at once and one that takes seconds costs little.
const pollMax = 10 * time.Millisecond

// Until calls cond until it holds or timeout passes, and reports whether it
// held. It is the one polling loop of the tests: use it where a miss is not a
// failure (a background watcher, a proof that reports its own errors), and
// WaitFor where it is.
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(pause, time.Until(deadline)+time.Millisecond))
		pause = min(2*pause, pollMax)
	}
	return true
}

// WaitFor polls cond until it holds, failing the test if timeout passes
// first. Unlike require.Eventually it calls cond on the test's own
// goroutine, so cond may itself fail the test. The timeout is a generous
// bound proving that something ended, never a measure of when it did: to
// assert "by then", record the time inside cond and compare afterwards.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
