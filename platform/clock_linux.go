package platform

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ContinuousMillis reads CLOCK_BOOTTIME: it keeps counting through suspend, so an
// authority budget measured on it cannot silently outlive a laptop lid being closed.
// It is the same clock the hold stamps into authority_observed_continuous_ms.
func ContinuousMillis() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_BOOTTIME: %w", err)
	}
	return int64(ts.Sec)*1000 + int64(ts.Nsec)/1e6, nil
}
