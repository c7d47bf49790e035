package pidfile

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/platform"
)

func TestLineWindows(t *testing.T) {
	start, err := platform.ProcessStartTime(windows.GetCurrentProcessId())
	require.NoError(t, err)
	require.NotZero(t, start)

	l, err := Line("worker")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d %d worker\n", os.Getpid(), start), l)
}
