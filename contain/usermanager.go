package contain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// A user's service manager (systemd --user) starts whatever a process of
// that user asks it to, in a unit of its own: outside the worker's
// container, so nothing of ours ends it. The worker reaches it over
// pathname unix sockets ($XDG_RUNTIME_DIR/bus, .../systemd/private), which
// the Landlock scope cannot close on the kernels we support. What keeps a
// worker from it is a worker user who has no manager to reach.

// userManagerAt says why the user login (uid) has a service manager a
// worker could reach, on the host whose file system is at root ("/" but
// in tests); "" when nothing says so. A path that cannot be examined is an
// error: not knowing is no reason to let the worker run.
func userManagerAt(root, login string, uid uint32) (string, error) {
	id := strconv.FormatUint(uint64(uid), 10)
	type sign struct{ path, means string }
	signs := []sign{
		{filepath.Join("/run/user", id, "systemd/private"), "its service manager runs"},
		{filepath.Join("/run/systemd/users", id), "it is logged in, with a service manager"},
	}
	if login != "" && filepath.Base(login) == login {
		signs = append(signs, sign{filepath.Join("/var/lib/systemd/linger", login), "it is lingering: its service manager runs whether it is logged in or not"})
	}
	for _, s := range signs {
		_, err := os.Lstat(filepath.Join(root, s.path))
		switch {
		case err == nil:
			return s.means + " (" + s.path + " exists)", nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("cannot tell whether uid %s has a service manager: %w", id, err)
		}
	}
	return "", nil
}

// checkUserManager refuses a worker user whose service manager the worker
// could ask to start processes outside the run, unless accepted
// (--worker-user-manager-ok). Without systemd (systemd: whether it is this
// host's manager) there is no such manager to look for.
func checkUserManager(root string, systemd, accepted bool, u *WorkerUser) error {
	if !systemd || accepted {
		return nil
	}
	why, err := userManagerAt(root, u.Login, u.Uid)
	if err != nil || why == "" {
		return err
	}
	return fmt.Errorf("%s (uid %d): %s; the worker could have it start processes outside the run (systemd-run --user), which nothing of ours ends. Name a user with no service manager (not logged in: loginctl terminate-user %s; not lingering: loginctl disable-linger %s), or accept it with --worker-user-manager-ok",
		u.Name, u.Uid, why, u.Name, u.Name)
}

// managerWarning is what the supervisor says at start about the service
// manager of the worker's user (systemd: whether systemd is this host's
// manager; root as for userManagerAt): a worker of our own user can always
// reach ours; a --worker-user worker reaches one only where its user was
// accepted with one (--worker-user-manager-ok). "" when there is none.
func managerWarning(iso Isolation, root string, systemd bool) string {
	switch {
	case !systemd:
		return ""
	case iso.User == nil:
		return "the worker runs as our own user and is not kept from its service manager (systemd --user): it can start processes outside the run through it (systemd-run --user), which nothing of ours then ends; --worker-user (as root) with a user that has no running manager closes it"
	}
	why, err := userManagerAt(root, iso.User.Login, iso.User.Uid)
	if why == "" && err == nil {
		return ""
	}
	return fmt.Sprintf("--worker-user-manager-ok: the service manager (systemd --user) of %s can start processes for the worker outside the run (systemd-run --user), which nothing of ours then ends",
		iso.User.Name)
}

// startWarnings are the lines the supervisor says once at start about what
// does not stand between the worker and the supervisor side or the host.
func (iso Isolation) startWarnings() []string {
	var out []string
	for _, w := range []string{iso.SameUserWarning(), iso.UnfencedWarning(), managerWarning(iso, "/", systemdHost())} {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}
