package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fence is the shared log every worker of a test writes its fencing term to:
// a stand-in for a store that fences writes by term.
type fence struct {
	path string
	term uint64
	role string
}

// append writes "ok|reject WHAT TERM NS PID ROLE" under an exclusive flock of
// the log: reject when a higher term was already accepted, which is what a
// fenced store does with a deposed holder's late write. It reports whether
// the write was accepted.
func (f fence) append(what string) (bool, error) {
	file, err := os.OpenFile(f.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return false, fmt.Errorf("open fenced log: %w", err)
	}
	defer file.Close()
	if err := unix.Flock(int(file.Fd()), unix.LOCK_EX); err != nil {
		return false, fmt.Errorf("lock fenced log: %w", err)
	}
	// Closing the file releases the lock.
	high, err := highestAccepted(file)
	if err != nil {
		return false, err
	}
	ns, err := boottimeNs()
	if err != nil {
		return false, err
	}
	verdict := "ok"
	if f.term < high {
		verdict = "reject"
	}
	line := fmt.Sprintf("%s %s %d %d %d %s\n", verdict, what, f.term, ns, os.Getpid(), f.role)
	if _, err := file.Write([]byte(line)); err != nil {
		return false, fmt.Errorf("write fenced log: %w", err)
	}
	return verdict == "ok", nil
}

// highestAccepted reads the highest term on an "ok" line of the log.
func highestAccepted(r io.ReaderAt) (uint64, error) {
	var high uint64
	sc := bufio.NewScanner(io.NewSectionReader(r, 0, 1<<40))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "ok" {
			continue
		}
		if t, err := strconv.ParseUint(f[2], 10, 64); err == nil && t > high {
			high = t
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read fenced log: %w", err)
	}
	return high, nil
}

// boottimeNs is CLOCK_BOOTTIME in nanoseconds: the one clock every worker and
// the test compare, immune to wall-clock steps (and not namespaced by a PID
// namespace).
func boottimeNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_BOOTTIME: %w", err)
	}
	return ts.Nano(), nil
}
