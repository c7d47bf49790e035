package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// When containment cannot be proven the terminal line is withheld, the survivors
// are named on stderr, the exit is 70, and the hold is killed without a chance to
// release: a released lease would let a new leader start while our worker may
// still exist. A task frozen by the cgroup v1 freezer ignores SIGKILL until it is
// thawed, which makes a real, reproducible survivor.
func TestSurvivorWithholdsTerminalLineAndRelease(t *testing.T) {
	t.Parallel()
	freezer := freezerCgroup(t)
	r := start(t, sc{
		worker: "--ignore-signals --child",
		hold:   []string{"--stamps", "{dir}/stamps", "emit:leader,term=6,budget=60000"},
	})
	r.waitEvent("leader", 5*time.Second)
	child := freezeChild(t, freezer, r.dir)

	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 70, r.wait(bound))
	require.Equal(t, []string{"leader"}, r.events(), "no terminal line without proof")
	require.Contains(t, r.stderr(), fmt.Sprintf("survivor: pid %d", child.pid))
	require.Contains(t, r.stderr(), "terminal event withheld because containment could not be proved")
	require.Contains(t, r.stderr(), "killed without releasing the lease")
	stamps, _ := os.ReadFile(filepath.Join(r.dir, "stamps"))
	require.NotContains(t, string(stamps), "released", "the hold released the lease while the worker survived")

	// Thaw: the pending SIGKILL takes effect and the harness proves it dead.
	require.NoError(t, os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("THAWED"), 0o644))
	requireAllDeadWithin(t, r.dir, 5*time.Second)
}

// freezeChild freezes the "child" process the escaper worker of dir
// recorded (its worker and child both recorded first): a process that ignores
// SIGKILL until it is thawed.
func freezeChild(t *testing.T, freezer, dir string) recorded {
	t.Helper()
	waitRecorded(t, dir+"/pids", 2)
	var child recorded
	for _, rec := range pidsIn(dir + "/pids") {
		if rec.role == "child" {
			child = rec
		}
	}
	require.NotZero(t, child.pid)
	require.NoError(t, os.WriteFile(filepath.Join(freezer, "cgroup.procs"), []byte(strconv.Itoa(child.pid)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("FROZEN"), 0o644))
	waitFreezerState(t, freezer, "FROZEN")
	return child
}

// freezerCgroup creates a cgroup v1 freezer child (found through mountinfo).
func freezerCgroup(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var root string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		i := indexOf(f, "-")
		if i > 0 && i+3 < len(f) && f[i+1] == "cgroup" && strings.Contains(","+f[i+3]+",", ",freezer,") {
			root = f[4]
		}
	}
	require.NotEmpty(t, root, "no cgroup v1 freezer on this host")
	cg := filepath.Join(root, fmt.Sprintf("octostore-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(cg, "freezer.state"), []byte("THAWED"), 0o644)
		if !proctest.Until(3*time.Second, func() bool { return os.Remove(cg) == nil }) {
			t.Errorf("could not remove %s", cg)
		}
	})
	return cg
}

func waitFreezerState(t *testing.T, cg, want string) {
	t.Helper()
	var b []byte
	proctest.WaitFor(t, 5*time.Second, "freezer state "+want, func() bool {
		b, _ = os.ReadFile(filepath.Join(cg, "freezer.state"))
		return strings.TrimSpace(string(b)) == want
	})
}

// A member frozen for a moment (the freezer stands in for uninterruptible sleep:
// SIGKILL waits until it can run) delays the proof but not its outcome: teardown
// waits within its bound, and lost follows once the kernel shows it gone.
func TestMomentarilyFrozenMemberIsWaitedFor(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"cgroup", "process-group"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			freezer := freezerCgroup(t)
			r := start(t, sc{
				flags:  []string{"--containment", backend},
				worker: "--ignore-signals --child",
				hold:   []string{"emit:leader,term=6,budget=60000", "waitfile:{dir}/go", "emit:lost,term=6"},
			})
			r.waitEvent("leader", 5*time.Second)
			freezeChild(t, freezer, r.dir)
			require.NoError(t, os.WriteFile(filepath.Join(r.dir, "go"), nil, 0o644))
			time.Sleep(2500 * time.Millisecond) // past the 1 s grace: the kill is pending
			require.Equal(t, []string{"leader"}, r.events(), "lost before the frozen member was gone")
			require.NoError(t, os.WriteFile(filepath.Join(freezer, "freezer.state"), []byte("THAWED"), 0o644))
			require.Equal(t, 20, r.wait(bound), r.stderr())
			require.Equal(t, true, r.line("lost")["containment"].(map[string]any)["proven_empty"])
		})
	}
}
