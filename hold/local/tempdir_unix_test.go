//go:build unix

package local

import "testing"

// tempDir is t.TempDir; tempdir_windows_test.go says why Windows differs.
func tempDir(t *testing.T) string { return t.TempDir() }
