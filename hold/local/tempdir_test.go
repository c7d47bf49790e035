package local

import (
	"testing"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// tempDir is the test directory every test of this package uses (Wine-safe).
func tempDir(t *testing.T) string { return proctest.TempDir(t) }
