//go:build windows

package main

// holdRoot: on Windows the embedded hold runs in a job of its own (HoldArg);
// no process roots a group there.
func holdRoot([]string) (int, bool) { return 0, false }
