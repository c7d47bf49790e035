package hold

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// authorityProgram returns the prebuilt testbin/authority: a test binary
// under Wine cannot run go build, so `make test-windows` builds authority.exe
// into bin/windows and names that directory in OCTOSTORE_WIN_BIN. A missing
// program is an error, never a reason to skip the tests that need it.
func authorityProgram() (string, func(), error) {
	dir := os.Getenv("OCTOSTORE_WIN_BIN")
	if dir == "" {
		return "", nil, errors.New("OCTOSTORE_WIN_BIN must name the directory of the Windows binaries (make test-windows builds them into bin/windows and sets it)")
	}
	bin := filepath.Join(dir, "authority.exe")
	if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("missing test binary: %w", err)
	}
	return bin, func() {}, nil
}
