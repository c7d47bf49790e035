//go:build !linux && !darwin && !windows

package main

// continuousMillis has no continuous clock to read on this OS, so budget=
// is refused with exit 64 before anything is emitted.
func continuousMillis() (int64, error) { return 0, errUnsupported }
