//go:build linux

package hold

// continuousAlarms: platform.ContinuousTimer is a CLOCK_BOOTTIME timerfd here,
// which fires across a suspend without polling (wakeBy).
const continuousAlarms = true
