package contain_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/contain"
)

// A supervisor whose own cgroup was delegated to it (systemd's Delegate=yes
// chowns the directory, cgroup.procs and cgroup.subtree_control to the unit's
// user) creates its runs there, and first moves every process of that cgroup,
// itself included, into supervisor/ below it: cgroup v2 passes no controller
// on from a cgroup that holds processes of its own, and the pids.max of every
// run needs the pids controller passed on. Here the delegated cgroup holds a
// process besides the supervisor (a caller's shell), moved down with it.
func TestRunInItsOwnDelegatedCgroup(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	cg := newCgroupParent(t)
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		require.NoError(t, os.Chown(filepath.Join(cg, f), nobody, nobody))
	}
	caller, _ := sleepIn(t, cg)
	dir := t.TempDir()
	r := startCLIIn(t, cg, dir, nobody, "run", "--", "/bin/sh", "-c", "cat /proc/self/cgroup")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "containment: cgroup under "+cg+" (our own cgroup is delegated to us; we moved into "+contain.SupervisorLeaf+"/ below it", r.stderr())
	rel := strings.TrimPrefix(cg, cgroupMount(t))
	require.Regexp(t, `0::`+rel+`/run-[0-9.-]+/worker\n`, r.out.String(), "the worker ran in its run's leaf beside the supervisor's")
	procs, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(procs)), "no process is left in the delegated cgroup itself")
	moved, err := os.ReadFile(filepath.Join(cg, contain.SupervisorLeaf, "cgroup.procs"))
	require.NoError(t, err)
	require.Contains(t, strings.Fields(string(moved)), strconv.Itoa(caller.Pid), "the caller's process moved down with the supervisor")
}
