//go:build !windows

package platform

// WineVersion: Wine runs Windows programs only.
func WineVersion() (string, bool) { return "", false }
