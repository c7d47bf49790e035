package proctest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 10 ms until it holds, failing the test if timeout
// passes first. Unlike require.Eventually it calls cond on the test's own
// goroutine, so cond may itself fail the test.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
