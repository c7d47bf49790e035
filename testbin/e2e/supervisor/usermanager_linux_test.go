package supervisor

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// A user's service manager (systemd --user) starts what the worker asks of
// it outside the run. On a systemd host the supervisor refuses a worker user
// that has one unless --worker-user-manager-ok accepts it, and says at start
// what a worker can reach of one. This host need not run systemd: each
// supervisor runs in a mount namespace of its own with a fresh /run in which
// the host looks booted with systemd (/run/systemd/system) and nobody
// (65534) is logged in (/run/systemd/users/65534) or not; nothing of the
// host's own /run or /var/lib/systemd is touched.

// startOnFakeSystemd is startCLI (as root) with the supervisor in such a
// namespace; nobodyManager plants nobody's login.
func startOnFakeSystemd(t *testing.T, nobodyManager bool, args ...string) *run {
	t.Helper()
	const setup = `set -e
mount -t tmpfs -o mode=0755 octostore-test /run
mkdir -p /run/systemd/system /run/systemd/users
if [ "$NOBODY_MANAGER" = 1 ]; then : >/run/systemd/users/65534; fi
exec "$@"`
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", slices.Concat([]string{"-c", setup, "sh", bins.sup}, args)...)
	flag := "0"
	if nobodyManager {
		flag = "1"
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "NOBODY_MANAGER="+flag)
	// Go makes the new namespace's mounts private before the exec, so the
	// tmpfs on /run never reaches the host.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	r := &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1,
		gsess: make(chan platform.Proc, 1)}
	return launch(t, r)
}

// A worker user with a service manager is refused with 64 and the fix, by
// election, lock and run alike, before anything starts.
func TestWorkerUserWithServiceManagerRefused(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, kind := range []string{"election", "lock", "run"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := startOnFakeSystemd(t, true, cliArgs(kind, "--containment", "process-group", "--worker-user", "nobody")...)
			require.Equal(t, 64, r.wait(bound), r.stderr())
			require.Contains(t, r.stderr(), "nobody (uid 65534): it is logged in, with a service manager (/run/systemd/users/65534 exists)")
			require.Contains(t, r.stderr(), "accept it with --worker-user-manager-ok")
			require.NotContains(t, r.stderr(), "containment:", "nothing may start")
			require.Empty(t, r.out.String())
		})
	}
}

// What the supervisor says at start about the service manager the worker
// can reach: a worker user accepted with one, a worker of our own user (it
// can always reach ours), and nothing for a worker user without one.
func TestServiceManagerSaidAtStart(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	for _, c := range []struct {
		name    string
		manager bool
		flags   []string
		say     string
	}{
		{"accepted", true, []string{"--worker-user", "nobody", "--worker-user-manager-ok"},
			"warning: --worker-user-manager-ok: the service manager (systemd --user) of nobody can start processes for the worker outside the run (systemd-run --user)"},
		{"own user", false, nil,
			"warning: the worker runs as our own user and is not kept from its service manager (systemd --user): it can start processes outside the run through it (systemd-run --user)"},
		{"worker user without one", false, []string{"--worker-user", "nobody"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := startOnFakeSystemd(t, c.manager, cliArgs("run", slices.Concat([]string{"--containment", "process-group"}, c.flags)...)...)
			require.Equal(t, 0, r.wait(bound), r.stderr())
			require.Contains(t, r.stderr(), "proven empty")
			if c.say == "" {
				require.NotContains(t, r.stderr(), "service manager")
				return
			}
			require.Contains(t, r.stderr(), c.say)
		})
	}
}
