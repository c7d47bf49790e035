//go:build unix

package contain

// envKeyEqual compares environment variable names: case matters on unix.
func envKeyEqual(a, b string) bool { return a == b }
