package platform

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ContinuousTimer fires at an absolute time on the continuous clock. On Linux it is
// a timerfd on CLOCK_BOOTTIME: the kernel wakes us at the deadline even if the
// machine was suspended in between (a Go timer runs on CLOCK_MONOTONIC, which stops
// during suspend, and would fire late by the length of the suspend), and nothing
// polls while we wait.
type ContinuousTimer struct {
	f  *os.File
	fd int
}

// NewContinuousTimer returns a disarmed timer.
func NewContinuousTimer() (*ContinuousTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_BOOTTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create(CLOCK_BOOTTIME): %w", err)
	}
	// A non-blocking fd handed to os.NewFile is served by the runtime poller, so
	// Wait parks the goroutine instead of a thread.
	return &ContinuousTimer{f: os.NewFile(uintptr(fd), "deadline-timer"), fd: fd}, nil
}

// Set arms the timer for atMs on the continuous clock; atMs <= 0 disarms it. A time
// already past fires at once.
func (t *ContinuousTimer) Set(atMs int64) error {
	var spec unix.ItimerSpec
	if atMs > 0 {
		spec.Value = unix.NsecToTimespec(atMs * 1e6)
	}
	if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return fmt.Errorf("timerfd_settime: %w", err)
	}
	return nil
}

// Wait blocks until the armed time passes or the timer is closed.
func (t *ContinuousTimer) Wait() error {
	var b [8]byte
	_, err := t.f.Read(b[:])
	return err
}

// Close releases the timer and wakes a pending Wait with an error.
func (t *ContinuousTimer) Close() error { return t.f.Close() }
