package supervisor

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// killAllUID runs the kill(-1) case: a uid no account uses, so that a kill(-1)
// that is not stopped reaches this test's processes and nobody else's (the
// other tests run as root and nobody).
const killAllUID = 64203

// Issue 32, finding 1: with no isolation flag, a worker of the supervisor's
// own user calls kill(-1, SIGKILL). Before the worker's Landlock scope it
// killed the supervisor, guardian, shims and hold at once; the supervisor died
// with no terminal line, the worker ran on, and a second supervisor of the
// same name then started its worker beside it. In the default mode the kill
// must reach nothing of the supervisor side: A goes on leading, B of the same
// name waits, and B leads only once A released with its worker proven gone.
func TestWorkerKillAllCannotEndTheSupervisorSide(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(xdg), 0o711))
	require.NoError(t, os.Chown(xdg, killAllUID, killAllUID))
	env := []string{"XDG_RUNTIME_DIR=" + xdg}
	a := startLocal(t, sc{uid: killAllUID, worker: "--kill-all {dir}/killed", env: env}, "election", "room", "agent-a", "--server", "local")
	a.waitEvent("leader", bound)
	result := filepath.Join(a.dir, "killed")
	proctest.WaitFor(t, bound, "A's worker to call kill(-1)", func() bool { _, err := os.Stat(result); return err == nil })
	got, err := os.ReadFile(result)
	require.NoError(t, err)
	require.Equal(t, "called\n", string(got))

	b := startLocal(t, sc{uid: killAllUID, env: env}, "election", "room", "agent-b", "--server", "local")
	b.waitEvent("waiting", bound)
	require.False(t, exited(a), "A's supervisor survived its worker's kill(-1); stderr:\n%s", a.stderr())

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, a.wait(bound), a.stderr())
	require.Contains(t, a.out.String(), `"event":"released"`)
	b.waitEvent("leader", bound)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, b.wait(bound), b.stderr())
	require.NotContains(t, a.stderr(), "warning:", "the default mode has a boundary here")
}
