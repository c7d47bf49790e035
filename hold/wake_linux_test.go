package hold

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// The continuous alarm fires at its continuous deadline by itself: after a
// suspend the scheduler timer would still be far off, and only the timerfd
// ends the wait on time.
func TestAlarmFiresOnTheContinuousClockAlone(t *testing.T) {
	now, err := platform.ContinuousMillis()
	require.NoError(t, err)
	began := time.Now()
	fired, stop, err := alarm(now+50, time.Hour)
	require.NoError(t, err)
	defer stop()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the continuous alarm did not fire 50 ms after it was set")
	}
	after, err := platform.ContinuousMillis()
	require.NoError(t, err)
	require.GreaterOrEqual(t, after, now+50, "fired before its continuous deadline")
	t.Logf("fired after %v", time.Since(began).Round(time.Millisecond))
}

// And at the scheduler deadline when that comes first.
func TestAlarmFiresOnTheSchedulerClock(t *testing.T) {
	now, err := platform.ContinuousMillis()
	require.NoError(t, err)
	fired, stop, err := alarm(now+3_600_000, 50*time.Millisecond)
	require.NoError(t, err)
	defer stop()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler timer did not fire 50 ms after it was set")
	}
}

// A wait on the system clock does not wake before its deadline: no 100 ms
// sampling (the poll it replaced fired after AuthorityPoll, within this
// window). Timers never fire early, so a loaded machine cannot fail this.
func TestSystemClockWaitDoesNotPoll(t *testing.T) {
	d, err := within(SystemClock{}, 2*time.Second)
	require.NoError(t, err)
	rem, err := d.Remaining(SystemClock{})
	require.NoError(t, err)
	fired, stop := wakeBy(SystemClock{}, d, rem)
	defer stop()
	select {
	case <-fired:
		t.Fatalf("woke before the deadline, %v left", mustRemaining(t, d))
	case <-time.After(5 * AuthorityPoll):
	}
}

func mustRemaining(t *testing.T, d Deadline) time.Duration {
	rem, err := d.Remaining(SystemClock{})
	require.NoError(t, err)
	return rem
}

// Every wait releases its timerfd: a hold waits thousands of times.
func TestWaitsLeaveNoDescriptor(t *testing.T) {
	before := openFDs(t)
	w := &Waiter{Clock: SystemClock{}}
	for range 200 {
		d, err := within(SystemClock{}, time.Millisecond)
		require.NoError(t, err)
		o, err := w.Sleep(d, false)
		require.NoError(t, err)
		require.Equal(t, DeadlineReached, o)
	}
	// A stopped alarm's goroutine closes nothing itself; Close did.
	require.LessOrEqual(t, openFDs(t), before, "descriptors left open by 200 waits")
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}
