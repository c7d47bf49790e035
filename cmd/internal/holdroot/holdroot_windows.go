//go:build windows

package holdroot

// Main: on Windows the embedded hold runs in a job of its own (the
// supervisor's HoldArg); no process roots a group there.
func Main(string, []string) (int, bool) { return 0, false }
