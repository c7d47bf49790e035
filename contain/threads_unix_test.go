//go:build unix

package contain

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every process of ours runs on ownProcs Ps, which the thread reserve is sized
// for: the helpers by their environment, the supervisor by reserveThreads,
// whatever GOMAXPROCS it was started with (the host's CPU count by default).
func TestReserveThreadsCapsGOMAXPROCS(t *testing.T) {
	was := runtime.GOMAXPROCS(8 * ownProcs)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	reserveThreads()
	require.Equal(t, ownProcs, runtime.GOMAXPROCS(0))

	runtime.GOMAXPROCS(1)
	reserveThreads()
	require.Equal(t, 1, runtime.GOMAXPROCS(0), "a smaller setting stays")
}
