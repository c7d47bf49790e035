package hold

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// The alarm fires on whichever clock reaches its deadline first. On the
// continuous clock alone with the scheduler timer an hour away, as after a
// suspend, only the timerfd can end the wait on time.
func TestAlarmFiresOnEitherClock(t *testing.T) {
	for _, c := range []struct {
		name      string
		contAfter int64 // ms from now on the continuous clock
		schedRem  time.Duration
	}{
		{"continuous", 50, time.Hour},
		{"scheduler", 3_600_000, 50 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			now, err := platform.ContinuousMillis()
			require.NoError(t, err)
			fired, stop, err := alarm(now+c.contAfter, c.schedRem)
			require.NoError(t, err)
			defer stop()
			select {
			case <-fired:
			case <-time.After(10 * time.Second):
				t.Fatalf("the %s deadline 50 ms away did not fire the alarm", c.name)
			}
			if c.name == "continuous" {
				after, err := platform.ContinuousMillis()
				require.NoError(t, err)
				require.GreaterOrEqual(t, after, now+c.contAfter, "fired before its continuous deadline")
			}
		})
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
