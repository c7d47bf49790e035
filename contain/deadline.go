package contain

import (
	"errors"
	"fmt"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// armedDeadline is the authority deadline a host enforces (the guardian on
// unix, the supervisor's own watcher on Windows), in milliseconds on the
// continuous clock.
type armedDeadline struct {
	gen     uint64 // 0 until the first authority was armed
	fireMs  int64  // the worker group is contained from here on
	killMs  int64  // its graceful stop ends here at the latest
	expired bool   // fired: nothing can be armed or started any more
}

// check decides whether deadline generation gen may replace the armed one at
// now: only gen+1 is accepted, a deadline that already fired is terminal, and
// a renewal never moves an expired deadline back into the future.
func (a *armedDeadline) check(now int64, gen uint64, fireMs, killMs int64) error {
	switch {
	case a.expired:
		return errors.New("the authority deadline already expired")
	case gen != a.gen+1:
		return fmt.Errorf("deadline generation %d does not follow %d", gen, a.gen)
	case fireMs <= now:
		return errors.New("the deadline is already in the past")
	case killMs < fireMs:
		return errors.New("the kill time precedes the deadline")
	case a.gen > 0 && a.fireMs <= now:
		return errors.New("the previous deadline already passed")
	}
	return nil
}

// stopBy is when a group's graceful stop ends: the grace from now, but for the
// worker never later than the armed kill time, so a late stop gains no extra time.
func (a *armedDeadline) stopBy(group string, grace time.Duration) time.Time {
	until := time.Now().Add(grace)
	if group == groupWorker && a.gen > 0 {
		if now, err := platform.ContinuousMillis(); err == nil {
			if kill := time.Now().Add(time.Duration(a.killMs-now) * time.Millisecond); kill.Before(until) {
				until = kill
			}
		}
	}
	return until
}
