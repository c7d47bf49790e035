package platform

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ContinuousMillis reads CLOCK_MONOTONIC_RAW, which on macOS is mach continuous
// time and includes sleep, matching what the hold stamps.
func ContinuousMillis() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_MONOTONIC_RAW: %w", err)
	}
	return int64(ts.Sec)*1000 + int64(ts.Nsec)/1e6, nil
}
