//go:build unix && !linux

package contain

// awaitStop reports false at once: macOS offers no waitid(WNOWAIT) through
// x/sys, and taking a stop with wait4(WUNTRACED) would race the reaper. A
// stopped guardian is noticed there only by the supervisor's backstop timer
// after the armed deadline, or when a request to it times out.
func awaitStop(int) bool { return false }
