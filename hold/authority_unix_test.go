//go:build unix

package hold

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// authorityProgram builds testbin/authority for the tests and returns its
// path and a cleanup that removes it.
func authorityProgram() (string, func(), error) {
	dir, err := os.MkdirTemp("", "hold-authority-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "authority")
	out, err := proctest.GoBuild("-o", bin, "../testbin/authority").CombinedOutput()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building testbin/authority: %w\n%s", err, out)
	}
	return bin, cleanup, nil
}
