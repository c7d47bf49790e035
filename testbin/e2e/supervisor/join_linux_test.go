package supervisor

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program is born inside its cgroup leaf both through clone3
// (CLONE_INTO_CGROUP) and, where clone3 is refused, through the join helper that
// enters the leaf and only then execs it. The test build forces the second path.
func TestProgramBornInsideItsLeaf(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, join := range []bool{false, true} {
		name := map[bool]string{false: "clone3", true: "join helper"}[join]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bins.sup, "run", "--containment", "cgroup", "--", "/bin/sh", "-c", "grep '^0::' /proc/self/cgroup")
			cmd.Env = os.Environ()
			if join {
				cmd.Env = append(cmd.Env, "OCTOSTORE_SUPERVISOR_TESTHOOK_JOIN=1")
			}
			out, err := cmd.Output()
			require.NoError(t, err)
			line := strings.TrimSpace(string(out))
			require.Regexp(t, `^0::/octostore-supervisor/run-\d+\.\d+-\d+\.\d+/worker$`, line, "the program ran outside its leaf")
		})
	}
}

// Without a usable cgroup, an explicit --containment cgroup is refused before
// anything starts, while auto falls back to process groups and says so.
func TestUnprivilegedCgroupRequestRefused(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	dir := t.TempDir()
	r := startCLI(t, dir, nobody, "run", "--containment", "cgroup", "--", "/bin/true")
	require.Equal(t, 64, r.wait(bound))
	require.Contains(t, r.stderr(), "containment unavailable")

	dir = t.TempDir()
	r = startCLI(t, dir, nobody, "run", "--", "/bin/true")
	require.Equal(t, 0, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), "containment: process-group (cgroup v2 unavailable:")
}
