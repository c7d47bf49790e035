package supervisor

import (
	"fmt"
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

// A supervisor that runs as the worker of an unfenced one (--no-worker-scope),
// its cgroup that worker's leaf, moves into supervisor/ below that leaf and
// makes its runs there. When the outer run ends, all of it goes: before, the
// outer removed only its leaves, left the run's directories to hold the inner
// cgroups, and every later start-up sweep spent about a second failing to
// remove them. Behind the default fence the worker may write no cgroup file,
// so the inner supervisor falls back to process groups, says why, and its
// worker stays in the outer worker's leaf.
func TestRunRemovesCgroupsMadeBelowItsLeaves(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	parent := newCgroupParent(t)
	dir := t.TempDir()
	inner := fmt.Sprintf("exec %s run -- /bin/sh -c 'grep ^0:: /proc/self/cgroup'", bins.sup)
	rel := strings.TrimPrefix(parent, cgroupMount(t))

	r := startCLI(t, dir, 0, "run", "--no-worker-scope", "--cgroup-parent", parent, "--", "/bin/sh", "-c", inner)
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Regexp(t, `0::`+rel+`/run-[0-9.-]+/worker/run-[0-9.-]+/worker\n`, r.out.String(), "the inner run was made below the outer worker's leaf")
	require.Contains(t, r.stderr(), "we moved into "+contain.SupervisorLeaf+"/ below it")
	require.Empty(t, runDirsOf(t, parent, r.cmd.Process.Pid), "the outer run's cgroups are all gone")

	fenced := startCLI(t, dir, 0, "run", "--cgroup-parent", parent, "--", "/bin/sh", "-c", inner)
	require.Equal(t, 0, fenced.wait(bound), fenced.stderr())
	require.Regexp(t, `0::`+rel+`/run-[0-9.-]+/worker\n`, fenced.out.String(), "the inner worker stayed in the outer worker's leaf")
	require.Regexp(t, `containment: process-group \(cgroup v2 unavailable: .*permission denied\)`, fenced.stderr())
	require.Empty(t, runDirsOf(t, parent, fenced.cmd.Process.Pid))
}

// doctor checks a delegated cgroup by using it as a run would, moving every
// process of it into supervisor/, but leaves it as it found it: as the
// ExecStartPre= of a Delegate=yes unit, a cgroup left vacated with
// controllers enabled refused the unit's main process (systemd's
// 219/CGROUP, seen in the systemd VM's unit/doctor-pre-keeps-cgroup).
func TestDoctorLeavesItsDelegatedCgroupAsFound(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	cg := newCgroupParent(t)
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		require.NoError(t, os.Chown(filepath.Join(cg, f), nobody, nobody))
	}
	subtree, err := os.ReadFile(filepath.Join(cg, "cgroup.subtree_control"))
	require.NoError(t, err)
	caller, _ := sleepIn(t, cg)
	r := startCLIIn(t, cg, t.TempDir(), nobody, "doctor")
	r.wait(bound)
	require.Contains(t, r.out.String(), "we moved into "+contain.SupervisorLeaf+"/ below it", "doctor used the cgroup as a run would:\n%s%s", r.out.String(), r.stderr())
	require.NotContains(t, r.out.String(), "own cgroup left as found", r.out.String())
	procs, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	require.NoError(t, err)
	require.Equal(t, []string{strconv.Itoa(caller.Pid)}, strings.Fields(string(procs)), "the caller is back in the delegated cgroup, and only it")
	require.NoDirExists(t, filepath.Join(cg, contain.SupervisorLeaf))
	after, err := os.ReadFile(filepath.Join(cg, "cgroup.subtree_control"))
	require.NoError(t, err)
	require.Equal(t, string(subtree), string(after), "the controllers it passes on are as they were")
}
