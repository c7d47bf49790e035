//go:build unix

package holdcli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// looseTokenRefusal is how a token file others may read is refused.
const looseTokenRefusal = "owner-only permissions"

// looseTokenFile writes a token file that others may read (mode 0644).
func looseTokenFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte("tok\n"), 0o644))
	return p
}
