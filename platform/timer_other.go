//go:build !linux

package platform

import (
	"errors"
	"sync"
	"time"
)

// ContinuousTimer fires at an absolute time on the continuous clock. Without a
// timerfd the Go timer (which may not count suspend) is re-checked against the
// continuous clock at least once a second while armed, so a suspend delays the
// firing by at most that second.
type ContinuousTimer struct {
	mu     sync.Mutex
	at     int64
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once
}

// NewContinuousTimer returns a disarmed timer.
func NewContinuousTimer() (*ContinuousTimer, error) {
	return &ContinuousTimer{wake: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

// Set arms the timer for atMs on the continuous clock; atMs <= 0 disarms it.
func (t *ContinuousTimer) Set(atMs int64) error {
	t.mu.Lock()
	t.at = atMs
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return nil
}

// Wait blocks until the armed time passes or the timer is closed.
func (t *ContinuousTimer) Wait() error {
	for {
		t.mu.Lock()
		at := t.at
		t.mu.Unlock()
		step := time.Hour
		if at > 0 {
			now, err := ContinuousMillis()
			if err != nil {
				return err
			}
			if now >= at {
				t.mu.Lock()
				if t.at == at {
					t.at = 0
				}
				t.mu.Unlock()
				return nil
			}
			step = min(time.Duration(at-now)*time.Millisecond, time.Second)
		}
		tm := time.NewTimer(step)
		select {
		case <-t.closed:
			tm.Stop()
			return errors.New("timer closed")
		case <-t.wake:
		case <-tm.C:
		}
		tm.Stop()
	}
}

// Close releases the timer and wakes a pending Wait with an error.
func (t *ContinuousTimer) Close() error {
	t.once.Do(func() { close(t.closed) })
	return nil
}
