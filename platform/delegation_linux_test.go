package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// VacateCgroup moves every process of a cgroup, and what they fork meanwhile,
// into a leaf below it, so that the cgroup holds none of its own and may pass
// controllers on (cgroup v2's no internal process rule).
func TestVacateCgroupMovesEveryProcessDown(t *testing.T) {
	_, dir := testCgroup(t)
	startIn(t, dir)
	moved, err := VacateCgroup(dir, "supervisor")
	require.NoError(t, err)
	require.Equal(t, 3, moved)
	require.Empty(t, strings.Fields(readFile(t, filepath.Join(dir, "cgroup.procs"))))
	require.Len(t, strings.Fields(readFile(t, filepath.Join(dir, "supervisor", "cgroup.procs"))), 3)

	moved, err = VacateCgroup(dir, "supervisor")
	require.NoError(t, err, "a cgroup already vacated is left as it is")
	require.Zero(t, moved)

	require.NoError(t, UnvacateCgroup(dir, "supervisor", nil), "and put back as it was")
	require.Len(t, strings.Fields(readFile(t, filepath.Join(dir, "cgroup.procs"))), 3)
	require.NoDirExists(t, filepath.Join(dir, "supervisor"))
}

// systemd marks the cgroup of a unit with Delegate=yes (trusted.delegate from
// the system's manager, user.delegate from a user's); what lies below such a
// cgroup was delegated too, and nothing else is, whoever may write it.
func TestDelegateMarked(t *testing.T) {
	mount, dir := testCgroup(t)
	below := filepath.Join(dir, "a", "b")
	require.NoError(t, os.MkdirAll(below, 0o755))
	t.Cleanup(func() { _ = unix.Rmdir(below); _ = unix.Rmdir(filepath.Dir(below)) })
	require.False(t, DelegateMarked(mount, below), "root may write it; systemd did not delegate it")
	for _, name := range []string{"trusted.delegate", "user.delegate"} {
		require.NoError(t, unix.Setxattr(dir, name, []byte("1"), 0))
		require.True(t, DelegateMarked(mount, below), name)
		require.True(t, DelegateMarked(mount, dir), name)
		require.NoError(t, unix.Removexattr(dir, name))
	}
	require.NoError(t, unix.Setxattr(dir, "trusted.delegate", []byte("0"), 0))
	require.False(t, DelegateMarked(mount, below), "a mark of 0 is no delegation")
	require.False(t, DelegateMarked(mount, mount), "the root cgroup is never delegated")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
