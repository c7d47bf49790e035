package fencelog

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Append writes one line for a write of term under an exclusive flock of the
// log at path, which must exist (the test creates it, writable by every
// worker's user): rejected when a higher term was already accepted. It reports
// whether the write was accepted; a rejected write is the finding, not an
// error.
func Append(path string, term uint64, what, role string) (bool, error) {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return false, fmt.Errorf("open fenced log: %w", err)
	}
	defer file.Close() // closing the file releases the lock
	if err := unix.Flock(int(file.Fd()), unix.LOCK_EX); err != nil {
		return false, fmt.Errorf("lock fenced log: %w", err)
	}
	high, err := highestAccepted(file)
	if err != nil {
		return false, err
	}
	boot, err := Now()
	if err != nil {
		return false, err
	}
	e := Entry{OK: term >= high, What: what, Term: term, Boot: boot, Pid: os.Getpid(), Role: role}
	if _, err := file.Write([]byte(e.String() + "\n")); err != nil {
		return false, fmt.Errorf("write fenced log: %w", err)
	}
	return e.OK, nil
}

// highestAccepted is the highest term on an accepted line of the log.
func highestAccepted(f *os.File) (uint64, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	if err != nil {
		return 0, fmt.Errorf("read fenced log: %w", err)
	}
	entries, err := Parse(b)
	if err != nil {
		return 0, err
	}
	var high uint64
	for _, e := range entries {
		if e.OK {
			high = max(high, e.Term)
		}
	}
	return high, nil
}

// Now reads CLOCK_BOOTTIME, comparable with Entry.Boot: the one clock every
// worker and the test compare, immune to wall-clock steps and not namespaced by
// a PID namespace.
func Now() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_BOOTTIME: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// Heartbeat appends an "hb" line every interval until stop delivers, then a
// "stop" line. A rejected heartbeat is the finding, not an error: it goes on,
// as a worker that does not know it was deposed would.
func Heartbeat(path string, term uint64, role string, every time.Duration, stop <-chan os.Signal) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			_, err := Append(path, term, "stop", role)
			return err
		case <-tick.C:
			if _, err := Append(path, term, "hb", role); err != nil {
				return err
			}
		}
	}
}
