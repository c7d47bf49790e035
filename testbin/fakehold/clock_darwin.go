package main

import "golang.org/x/sys/unix"

// continuousMillis reads CLOCK_MONOTONIC_RAW, the continuous clock the hold
// and supervisor use on macOS (mach continuous time, includes sleep).
func continuousMillis() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
		return 0, err
	}
	return ts.Sec*1000 + ts.Nsec/1_000_000, nil
}
