package platform

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// x/sys/windows does not wrap GetTickCount64, so it is bound lazily here.
var procGetTickCount64 = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetTickCount64")

// ContinuousMillis reads GetTickCount64, which counts time spent in sleep and
// hibernation, so it is suspend-inclusive like CLOCK_BOOTTIME.
func ContinuousMillis() (int64, error) {
	if err := procGetTickCount64.Find(); err != nil {
		return 0, fmt.Errorf("find GetTickCount64: %w", err)
	}
	r, _, _ := procGetTickCount64.Call()
	return int64(r), nil
}
