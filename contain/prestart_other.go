//go:build !linux

package contain

// PrestartMain exists only where the fence does (Linux).
func PrestartMain([]string) int { return ExitSoftware }
