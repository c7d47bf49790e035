package contain

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// The supervisor's fallback may follow a guardian that died in its last
// moments, after it removed the run's cgroup. killRun then finds no
// directory: an empty run (the kernel removes only empty cgroups), not an
// error that would withhold the terminal line of a run proven empty.
func TestKillRunOfARemovedRunIsEmpty(t *testing.T) {
	requireRoot(t)
	b, err := ResolveBackend(BackendRequest{Containment: BackendCgroup})
	require.NoError(t, err)
	self, err := platform.NewProcReader().Stat(os.Getpid())
	require.NoError(t, err)
	name := runName(self, self)
	r, err := createRun(b, name, []string{groupWorker, groupHold})
	require.NoError(t, err)
	t.Cleanup(func() { r.remove(io.Discard) }) // a no-op once removed below

	pids, empty, err := killRun(b, name, time.Second)
	require.NoError(t, err)
	require.True(t, empty, "an empty run")
	require.Empty(t, pids)

	r.remove(io.Discard)
	_, err = os.Stat(r.dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	pids, empty, err = killRun(b, name, time.Second)
	require.NoError(t, err)
	require.True(t, empty, "a removed run")
	require.Empty(t, pids)
}
