package contain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// plant creates path (a file) below root, with its directories.
func plant(t *testing.T, root, path string) {
	t.Helper()
	p := filepath.Join(root, path)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, nil, 0o644))
}

// Each sign of a user's service manager is found below the root it is
// given, for that user only; a path that cannot be examined is an error,
// never "no manager".
func TestUserManagerDetected(t *testing.T) {
	for _, c := range []struct{ name, path, says string }{
		{"manager socket", "run/user/1234/systemd/private", "/run/user/1234/systemd/private exists"},
		{"logged in", "run/systemd/users/1234", "/run/systemd/users/1234 exists"},
		{"lingering", "var/lib/systemd/linger/alice", "it is lingering"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			why, err := userManagerAt(root, "alice", 1234)
			require.NoError(t, err)
			require.Empty(t, why, "nothing planted yet")
			plant(t, root, c.path)
			why, err = userManagerAt(root, "alice", 1234)
			require.NoError(t, err)
			require.Contains(t, why, c.says)
			why, err = userManagerAt(root, "bob", 1235)
			require.NoError(t, err)
			require.Empty(t, why, "another user's manager is not bob's")
		})
	}
	t.Run("cannot be examined", func(t *testing.T) {
		root := t.TempDir()
		plant(t, root, "run/user") // a file where a directory belongs: ENOTDIR
		_, err := userManagerAt(root, "alice", 1234)
		require.ErrorContains(t, err, "cannot tell whether uid 1234 has a service manager")
	})
}

// A worker user with a service manager is refused on a systemd host, with
// the fix named, unless accepted; without systemd nothing is looked for.
func TestCheckUserManagerRefuses(t *testing.T) {
	root := t.TempDir()
	u := &WorkerUser{Name: "alice", Uid: 1234, Gid: 1234, FreshEnv: FreshEnv{Login: "alice"}}
	require.NoError(t, checkUserManager(root, true, false, u), "no manager: accepted")
	plant(t, root, "var/lib/systemd/linger/alice")
	err := checkUserManager(root, true, false, u)
	require.ErrorContains(t, err, "alice (uid 1234): it is lingering")
	require.ErrorContains(t, err, "systemd-run --user")
	require.ErrorContains(t, err, "loginctl disable-linger alice")
	require.ErrorContains(t, err, "--worker-user-manager-ok")
	require.NoError(t, checkUserManager(root, true, true, u), "--worker-user-manager-ok accepts it")
	require.NoError(t, checkUserManager(root, false, false, u), "no systemd: no user manager to refuse")
}

// At start the supervisor says what the worker can reach of a service
// manager: always for a worker of our own user on a systemd host, for a
// worker user only when that user has a manager (accepted, or it would have
// been refused), and nothing without systemd.
func TestServiceManagerWarning(t *testing.T) {
	root := t.TempDir()
	same := Isolation{}
	w := managerWarning(same, root, true)
	require.Contains(t, w, "systemd-run --user")
	require.Contains(t, w, "--worker-user")
	require.Empty(t, managerWarning(same, root, false))

	other := Isolation{User: &WorkerUser{Name: "alice", Uid: 1234, Gid: 1234, FreshEnv: FreshEnv{Login: "alice"}}}
	require.Empty(t, managerWarning(other, root, true), "alice has no manager")
	plant(t, root, "run/systemd/users/1234")
	require.Contains(t, managerWarning(other, root, true), "--worker-user-manager-ok: the service manager (systemd --user) of alice can start processes")
	require.Empty(t, managerWarning(other, root, false))
}
