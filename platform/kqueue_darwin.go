package platform

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ProcWatch wakes a waiter when a watched process exits or forks: a kqueue with
// one EVFILT_PROC filter (NOTE_EXIT | NOTE_FORK) per process. It replaces
// polling the process table on macOS: teardown re-scans when a member dies or
// forks instead of every few milliseconds, and tracking re-scans as soon as a
// member forks, while the child is most likely still attached to its parent.
//
// XNU attaches the filter only to a live process (a process that has already
// exited fails with ESRCH) and reports every later exit, so a registration
// never misses an exit: it either fails or the exit arrives. NOTE_TRACK, which
// would follow forks by itself, has not worked since Mac OS X 10.5, so new
// children are found by re-scanning and added by the caller.
//
// Watching a pid never signals it, so a recycled pid costs at most a spurious
// or a missing wake-up; callers bound every wait.
type ProcWatch struct{ kq int }

// NewProcWatch returns an empty watch.
func NewProcWatch() (*ProcWatch, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("kqueue: %w", err)
	}
	unix.CloseOnExec(kq)
	return &ProcWatch{kq: kq}, nil
}

// Add watches pid for exit and fork. It returns ErrNoProcess when pid has
// already exited (or never existed).
func (w *ProcWatch) Add(pid int) error {
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_CLEAR)
	ev.Fflags = unix.NOTE_EXIT | unix.NOTE_FORK
	for {
		_, err := unix.Kevent(w.kq, []unix.Kevent_t{ev}, nil, nil)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			return ErrNoProcess
		default:
			return fmt.Errorf("kevent EVFILT_PROC %d: %w", pid, err)
		}
	}
}

// Wait blocks until a watched process exits or forks, or timeout passes. It
// reports whether anything happened; an interrupted wait reports true, so the
// caller looks again rather than sleeping through a change.
func (w *ProcWatch) Wait(timeout time.Duration) (bool, error) {
	var evs [32]unix.Kevent_t
	ts := unix.NsecToTimespec(max(timeout, 0).Nanoseconds())
	n, err := unix.Kevent(w.kq, nil, evs[:], &ts)
	if errors.Is(err, unix.EINTR) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("kevent wait: %w", err)
	}
	return n > 0, nil
}

// Close releases the kqueue.
func (w *ProcWatch) Close() error { return unix.Close(w.kq) }
