//go:build linux || darwin

package pidfile

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

func TestLine(t *testing.T) {
	self, err := platform.NewProcReader().Stat(os.Getpid())
	require.NoError(t, err)

	l, err := Line("worker")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d %d worker\n", os.Getpid(), self.StartTicks), l)

	l, err = Line("")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d %d\n", os.Getpid(), self.StartTicks), l)
}
