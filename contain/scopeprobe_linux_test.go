package contain

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// doctor's scope probe needs no other process to try the scope on: a connect
// to an abstract socket this process opened is refused behind the scope, and
// goes through without it (so the probe can fail).
func TestScopeProbeTriesAnAbstractSocket(t *testing.T) {
	if platform.LandlockABI() < 6 {
		t.Fatalf("Landlock ABI %d: this host has no scopes (6.12 and up), which the suite needs", platform.LandlockABI())
	}
	connect := func(scoped bool) error {
		l, err := listenAbstract()
		require.NoError(t, err)
		defer unix.Close(l.fd)
		require.True(t, len(l.addr.Name) > 1 && l.addr.Name[0] == '@', "an abstract name: %q", l.addr.Name)
		_, err = onThrowawayThread(func() (string, error) {
			if scoped {
				if err := platform.ScopeThread(); err != nil {
					return "", fmt.Errorf("enter the scope: %w", err)
				}
			}
			return "", l.connect()
		})
		return err
	}
	require.NoError(t, connect(false), "without the scope")
	require.ErrorIs(t, connect(true), unix.EPERM, "behind the scope")
}
