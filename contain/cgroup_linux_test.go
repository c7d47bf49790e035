package contain

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

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

// A run createRun made carries a mark for itself alone: the same mark on a
// directory of another name, or on one made anew under the run's name (a new
// inode), is no mark, and sweepRun only looks at such a directory, in every
// mode, however dead the owners its name gives.
func TestSweepKnowsRunsOnlyByTheirOwnMark(t *testing.T) {
	requireRoot(t)
	b, err := ResolveBackend(BackendRequest{Containment: BackendCgroup})
	require.NoError(t, err)
	name := runName(platform.Proc{Pid: 999999, StartTicks: 1}, platform.Proc{Pid: 999998, StartTicks: uint64(os.Getpid())})
	r, err := createRun(b, name, []string{groupWorker})
	require.NoError(t, err)
	require.NoError(t, r.markErr)
	t.Cleanup(func() { r.remove(io.Discard) })
	require.True(t, markedRun(r.dir), "createRun's own run")

	buf := make([]byte, 256)
	n, err := unix.Getxattr(r.dir, runMarkXattr, buf)
	require.NoError(t, err)
	mark := buf[:n]
	other := filepath.Join(b.Parent, runName(platform.Proc{Pid: 999997, StartTicks: 1}, platform.Proc{Pid: 999996, StartTicks: uint64(os.Getpid())}))
	require.NoError(t, os.Mkdir(other, 0o755))
	t.Cleanup(func() { _ = unix.Rmdir(other) })
	require.NoError(t, unix.Setxattr(other, runMarkXattr, mark, 0))
	require.False(t, markedRun(other), "a mark copied from another run")
	var st unix.Stat_t
	require.NoError(t, unix.Stat(r.dir, &st))
	require.NoError(t, unix.Setxattr(r.dir, runMarkXattr, []byte(fmt.Sprintf("%s ino %d pidns 1", name, st.Ino)), 0))
	require.False(t, markedRun(r.dir), "a mark made in another PID namespace")
	ours, elsewhere := runMarkOf(r.dir)
	require.Equal(t, [2]bool{false, true}, [2]bool{ours, elsewhere}, "another PID namespace's run, said as such")
	require.NoError(t, unix.Setxattr(r.dir, runMarkXattr, mark, 0))

	r.remove(io.Discard)
	require.NoError(t, os.Mkdir(r.dir, 0o755))
	require.NoError(t, unix.Setxattr(r.dir, runMarkXattr, mark, 0))
	require.False(t, markedRun(r.dir), "a mark left on a name made anew")

	for _, mode := range []sweepMode{sweepList, sweepAll, sweepStartup} {
		s, found, err := sweepRun(b, r.dir, mode, time.Second)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, StaleRun{Dir: r.dir, ProvenEmpty: true, NotOurs: true}, s, "mode %d", mode)
		require.DirExists(t, r.dir)
	}
}
