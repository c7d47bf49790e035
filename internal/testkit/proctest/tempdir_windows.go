//go:build windows

package proctest

import (
	"os"
	"path/filepath"
	"testing"
)

// TempDir replaces t.TempDir under Windows, whose cleanup fails under Wine 8:
// Go 1.26's RemoveAll deletes through an NtSetInformationFile class Wine does
// not implement ("Invalid function"), while a plain os.Remove works. The
// cleanup removes the tree entry by entry and fails the test if it cannot.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "octostore-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeTree(d); err != nil {
			t.Error(err)
		}
	})
	return d
}

func removeTree(p string) error {
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		c := filepath.Join(p, e.Name())
		if e.IsDir() {
			err = removeTree(c)
		} else {
			err = os.Remove(c)
		}
		if err != nil {
			return err
		}
	}
	return os.Remove(p)
}
