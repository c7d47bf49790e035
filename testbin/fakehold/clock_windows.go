package main

import "golang.org/x/sys/windows"

// continuousMillis uses GetTickCount64 (milliseconds since boot, including
// sleep), the nearest Windows equivalent of CLOCK_BOOTTIME.
func continuousMillis() (int64, error) {
	return windows.DurationSinceBoot().Milliseconds(), nil
}
