package main

import "golang.org/x/sys/unix"

// continuousMillis reads CLOCK_BOOTTIME, the clock the supervisor compares
// authority_observed_continuous_ms against on Linux (it keeps counting
// through suspend, unlike CLOCK_MONOTONIC).
func continuousMillis() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, err
	}
	return ts.Sec*1000 + ts.Nsec/1_000_000, nil
}
