// Package pidfile is the writing side of the pidfiles that the test programs
// (testbin/escaper, testbin/fakehold) keep: every process appends its own line
// "PID START [ROLE]", START being its platform.Proc.StartTicks in decimal (on
// Windows its creation time, platform.ProcessStartTime), so a
// test can tell the recorded process from a later one that reuses its pid.
// internal/testkit/proctest reads these files and compares START with what
// platform.ProcReader.Stat reports.
//
// Part of the test kit (internal/testkit): for this module's tests and test
// programs only; no product package imports it.
package pidfile

import (
	"os"
	"strconv"
)

// Line returns the calling process's pidfile line with its newline:
// "PID START ROLE\n", or "PID START\n" when role is empty. The caller appends it
// with a single O_APPEND write, so lines of concurrent writers never mix. Line
// fails, with an error wrapping errors.ErrUnsupported, where a process cannot
// read its own start time: everywhere but Linux, macOS and Windows.
func Line(role string) (string, error) {
	start, err := selfStart()
	if err != nil {
		return "", err
	}
	b := strconv.AppendInt(nil, int64(os.Getpid()), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, start, 10)
	if role != "" {
		b = append(b, ' ')
		b = append(b, role...)
	}
	return string(append(b, '\n')), nil
}
