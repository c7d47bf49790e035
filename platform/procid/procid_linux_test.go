package procid

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// A recorded process is alive only while it runs: not as a zombie its parent
// has not reaped yet, and not when its pid now names a later process.
func TestAlive(t *testing.T) {
	me, err := Self()
	require.NoError(t, err)
	require.True(t, me.Alive(), "this process")
	require.True(t, ID{Pid: me.Pid}.Alive(), "an old record without a start time judges the pid alone")
	require.False(t, ID{Pid: me.Pid, Start: me.Start + 1}.Alive(), "a later process reusing the pid is not the recorded one")
	require.False(t, ID{}.Alive())

	// A child that exited and is not reaped yet: a zombie, dead.
	child := exec.Command("true")
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Wait() })
	var zombie platform.Proc
	proctest.WaitFor(t, 10*time.Second, "the child to become a zombie", func() bool {
		zombie, err = platform.NewProcReader().Stat(child.Process.Pid)
		require.NoError(t, err)
		return zombie.State == 'Z'
	})
	require.False(t, ID{Pid: zombie.Pid, Start: zombie.StartTicks}.Alive(), "a zombie")
	require.False(t, ID{Pid: zombie.Pid}.Alive(), "a zombie, old record")
	require.NoError(t, child.Wait())
	require.False(t, ID{Pid: zombie.Pid, Start: zombie.StartTicks}.Alive(), "a reaped process")
}
