//go:build !windows

package proctest

import "testing"

// TempDir is t.TempDir; on Windows it works around Wine's RemoveAll.
func TempDir(t testing.TB) string { return t.TempDir() }
