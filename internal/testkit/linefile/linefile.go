// Package linefile parses the small line-per-record files the tests and their
// helper programs exchange (pidfiles, fenced logs): every well-formed line is
// kept, and the first malformed one is reported, so a caller may still act on
// what it can prove.
//
// Part of the test kit (internal/testkit): for this module's tests and test
// programs only; no product package imports it.
package linefile

import (
	"bufio"
	"bytes"
	"fmt"
)

// Parse applies parse to each line of b. It returns the records of the lines
// parse accepted, and an error naming the first line it refused; want
// describes the format for that error (e.g. "PID START [ROLE]").
func Parse[T any](b []byte, want string, parse func(line string) (T, bool)) ([]T, error) {
	var out []T
	var bad error
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		rec, ok := parse(sc.Text())
		if !ok {
			if bad == nil {
				bad = fmt.Errorf("malformed line %d %q (want %s)", n, sc.Text(), want)
			}
			continue
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil && bad == nil {
		bad = err
	}
	return out, bad
}
