package contain

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
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

// FreshEnv is the environment a worker gets instead of the supervisor's
// (environ): its user's, as login(1) makes it.
type FreshEnv struct {
	// Login, Home and Shell are the user database's: the worker's USER and
	// LOGNAME, HOME and SHELL.
	Login string `json:"login,omitempty"`
	Home  string `json:"home,omitempty"`
	Shell string `json:"shell,omitempty"`
	// Pass names the supervisor's variables the worker gets beside it
	// (--worker-env).
	Pass []string `json:"pass,omitempty"`
}

// EnvOptions are the flags that shape the worker's environment and user.
type EnvOptions struct {
	Pass       []string // --worker-env
	Share      bool     // --share-worker-user
	CleanEnv   bool     // --clean-env
	Supervised bool     // election, lock (not run)
}

// WithEnvOptions adds --clean-env, --worker-env (the supervisor's variables
// the worker also gets) and --share-worker-user to a resolved isolation.
// --worker-env belongs to --worker-user or --clean-env, --share-worker-user
// to --worker-user; both are refused otherwise, as is a name that cannot be
// a variable's. Supervised also refuses the holder's secrets (SecretEnv)
// and what the supervisor sets itself, which its worker never gets from its
// environment.
func (iso Isolation) WithEnvOptions(o EnvOptions) (Isolation, error) {
	switch {
	case iso.User == nil && o.Share:
		return iso, fmt.Errorf("%w: --share-worker-user goes with --worker-user (without it the worker runs as our own user)", ErrIsolation)
	case iso.User == nil && !o.CleanEnv && len(o.Pass) > 0:
		return iso, fmt.Errorf("%w: --worker-env goes with --worker-user or --clean-env (without them the worker gets our environment)", ErrIsolation)
	}
	if err := checkPassed(o.Pass, o.Supervised); err != nil {
		return iso, err
	}
	if iso.User == nil {
		if o.CleanEnv {
			fresh, err := ownFreshEnv()
			if err != nil {
				return iso, err
			}
			fresh.Pass = slices.Clone(o.Pass)
			iso.CleanEnv = &fresh
		}
		return iso, nil
	}
	u := *iso.User
	u.Pass, u.Share = slices.Clone(o.Pass), o.Share
	iso.User = &u
	return iso, nil
}

// checkPassed refuses --worker-env names that cannot be passed.
func checkPassed(pass []string, supervised bool) error {
	for _, name := range pass {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return fmt.Errorf("%w: --worker-env %q is not the name of a variable", ErrIsolation, name)
		case supervised && slices.Contains(SecretEnv, name):
			return fmt.Errorf("%w: --worker-env %s: the holder's secret never reaches the worker", ErrIsolation, name)
		case supervised && slices.Contains(supervisorSet, name):
			return fmt.Errorf("%w: --worker-env %s: the supervisor sets it for the worker itself", ErrIsolation, name)
		}
	}
	return nil
}

// ownFreshEnv is the fresh environment of this process's own user.
func ownFreshEnv() (FreshEnv, error) {
	u, err := user.Current()
	if err != nil {
		return FreshEnv{}, fmt.Errorf("%w: --clean-env: who we are: %v", ErrIsolation, err)
	}
	return FreshEnv{Login: u.Username, Home: u.HomeDir, Shell: loginShell(u.Username)}, nil
}

// workerEnviron is the worker's environment made from env (the
// supervisor's, its secrets already dropped): a --worker-user worker's and a
// --clean-env worker's fresh one, else env as it is.
func (iso Isolation) workerEnviron(env []string) []string {
	switch {
	case iso.User != nil:
		return iso.User.environ(env)
	case iso.CleanEnv != nil:
		return iso.CleanEnv.environ(env)
	}
	return env
}

// environ is what a worker with a fresh environment gets of env (the
// environment it would otherwise get): a fresh one for its user, as sudo's
// env_reset and login(1) make it (HOME, USER, LOGNAME, SHELL, PATH), the
// terminal and locale variables (keptForWorker), and the variables the user
// named (--worker-env), which win over the fresh ones. Nothing else of the
// supervisor's caller (CI and cloud credentials, API keys, root's paths)
// reaches a worker the caller chose not to trust with it.
func (u *FreshEnv) environ(env []string) []string {
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
