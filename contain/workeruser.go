package contain

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// workerPath is a --worker-user worker's PATH, as login(1) gives an ordinary
// user: none of root's directories, nothing relative.
const workerPath = "/usr/local/bin:/usr/bin:/bin"

// keptForWorker names the supervisor's variables a --worker-user worker keeps
// beside its reset environment without being asked: how to talk to a
// terminal and in which language, as sudo's env_reset keeps them. Nothing in
// them acts as anyone.
func keptForWorker(name string) bool {
	switch name {
	case "TERM", "LANG", "LANGUAGE", "TZ":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// supervisorSet are the worker's variables the supervisor sets itself.
var supervisorSet = []string{"OCTOSTORE_FENCING_TERM", "OCTOSTORE_FENCING_KEY", "OCTOSTORE_SUPERVISOR_READY_FILE"}

// WithWorkerUserOptions adds --worker-env (pass: the supervisor's variables
// the worker also gets) and --share-worker-user (share) to a resolved
// isolation. Both belong to --worker-user and are refused without it, as is
// a name that cannot be a variable's; supervised (election, lock) also
// refuses the holder's secrets (SecretEnv) and what the supervisor sets
// itself, which its worker never gets from its environment.
func (iso Isolation) WithWorkerUserOptions(pass []string, share, supervised bool) (Isolation, error) {
	if iso.User == nil {
		if len(pass) > 0 || share {
			return iso, fmt.Errorf("%w: --worker-env and --share-worker-user go with --worker-user (without it the worker runs as our own user, with our environment)", ErrIsolation)
		}
		return iso, nil
	}
	for _, name := range pass {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return iso, fmt.Errorf("%w: --worker-env %q is not the name of a variable", ErrIsolation, name)
		case supervised && slices.Contains(SecretEnv, name):
			return iso, fmt.Errorf("%w: --worker-env %s: the holder's secret never reaches the worker", ErrIsolation, name)
		case supervised && slices.Contains(supervisorSet, name):
			return iso, fmt.Errorf("%w: --worker-env %s: the supervisor sets it for the worker itself", ErrIsolation, name)
		}
	}
	u := *iso.User
	u.Pass, u.Share = slices.Clone(pass), share
	iso.User = &u
	return iso, nil
}

// environ is what a --worker-user worker gets of env (the environment the
// worker would otherwise get): a fresh one for its user, as sudo's env_reset
// and login(1) make it (HOME, USER, LOGNAME, SHELL, PATH), the terminal and
// locale variables (keptForWorker), and the variables the user named
// (--worker-env), which win over the fresh ones. Nothing else of the
// supervisor's caller (CI and cloud credentials, root's paths) reaches a
// user the caller chose not to trust. Without a worker user, env as it is.
func (u *WorkerUser) environ(env []string) []string {
	if u == nil {
		return env
	}
	home, shell := u.Home, u.Shell
	if home == "" {
		home = "/"
	}
	if shell == "" {
		shell = "/bin/sh"
	}
	out := []string{"HOME=" + home, "USER=" + u.Login, "LOGNAME=" + u.Login, "SHELL=" + shell, "PATH=" + workerPath}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if keptForWorker(k) || slices.Contains(u.Pass, k) {
			out = append(withoutVars(out, []string{k}), kv)
		}
	}
	return out
}

// loginShell is name's login shell from /etc/passwd, or /bin/sh where it is
// not found there (os/user does not say; macOS keeps its users elsewhere).
func loginShell(name string) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return "/bin/sh"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 7 && fields[0] == name && fields[6] != "" {
			return fields[6]
		}
	}
	return "/bin/sh"
}
