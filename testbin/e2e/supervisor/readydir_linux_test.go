package supervisor

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Root's ready directories (issue 32, finding 3), attacked as another local
// user would.

// readyRoot is where a root supervisor makes its workers' ready directories.
const readyRoot = "/run/octostore-supervisor/ready"

// startSup starts the supervisor with args, the test's environment plus env
// (TMPDIR dir and a private XDG_RUNTIME_DIR unless env says otherwise), and
// launch's end-of-test proofs.
func startSup(t *testing.T, dir string, env []string, args ...string) *run {
	t.Helper()
	cmd := exec.Command(bins.sup, shareNobody(args)...)
	cmd.Env = slices.Concat(os.Environ(), []string{"TMPDIR=" + dir, "XDG_RUNTIME_DIR=" + t.TempDir()}, env)
	return launch(t, &run{t: t, dir: dir, cmd: cmd, out: newLines(), errb: &syncBuf{}, done: make(chan struct{}), code: -1, gsess: make(chan platform.Proc, 1)})
}

// spareUser is an unprivileged system user that only the calling test runs
// workers as.
func spareUser(t *testing.T, name string) *user.User {
	t.Helper()
	u, err := user.Lookup(name)
	require.NoError(t, err, "the test needs the system user %s as a spare worker user", name)
	return u
}

// openDir is a test directory every user may write to.
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	require.NoError(t, os.Chmod(dir, 0o777))
	return dir
}

// A root supervisor made the worker's ready directory in $TMPDIR and then
// chowned it by path: another user who may write there swapped it for a
// symlink (inotify, then renameat2 RENAME_EXCHANGE), and root chowned a
// root-only file to the worker's user, within 1 to 7 runs. 200 runs with the
// racer, as nobody, armed: no win. (The ready directory is made where only
// root may write, and handed over through its descriptor.)
func TestReadyDirectoryChownRace(t *testing.T) {
	defaultPassOnly(t)
	t.Parallel()
	worker := spareUser(t, "games")
	tmp, out := openDir(t), openDir(t)
	secret := filepath.Join(t.TempDir(), "root-only")
	require.NoError(t, os.WriteFile(secret, []byte("root's"), 0o600))
	report := filepath.Join(out, "race")
	racer := exec.Command(bins.attacker)
	racer.Env = []string{"ATTACKER_MODE=chown-race", "ATTACKER_WATCH=" + tmp, "ATTACKER_TARGET=" + secret, "ATTACKER_REPORT=" + report}
	racer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	require.NoError(t, racer.Start())
	t.Cleanup(func() {
		_ = racer.Process.Kill()
		_ = racer.Wait()
	})
	waitFile(t, report, bound)
	wins := 0
	for i := range 200 {
		// The hold ends at once (exit 70): the ready directory is made and
		// handed over before it starts, whatever the backend (process-group:
		// a start sweeps no abandoned cgroups).
		r := startSup(t, t.TempDir(), []string{"TMPDIR=" + tmp}, "election", "--containment", "process-group", "--worker-user", worker.Username,
			"room", "agent", "/bin/true", "--", "/bin/true")
		require.Equal(t, 70, r.wait(bound), r.stderr())
		var st unix.Stat_t
		require.NoError(t, unix.Stat(secret, &st))
		if st.Uid != 0 {
			wins++
			t.Logf("run %d: root chowned %s to uid %d", i, secret, st.Uid)
			require.NoError(t, os.Chown(secret, 0, 0))
		}
	}
	swaps, _ := os.ReadFile(report)
	require.Zero(t, wins, "the racer won %d of 200 runs; its log:\n%s", wins, swaps)
	require.NotContains(t, string(swaps), "ok swap", "a ready directory appeared in $TMPDIR")
}
