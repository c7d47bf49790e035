package contain

import (
	"errors"
	"fmt"
	"os"
)

// workerScope: Landlock is Linux's; a Windows worker is no same-user
// signalling threat of the kind it scopes (no kill(-1)), and its job is
// closed by the kernel with the supervisor's last handle.
func workerScope(bool) (bool, string) { return false, "" }

// fenceOffered: a Windows worker has no cgroups to be fenced from.
func fenceOffered(bool) (bool, string) { return false, "" }

func workerUserUnsupported() error {
	return errors.New("needs Linux or macOS (Windows workers run under the supervisor's own account)")
}

// NoNewPrivsUnsupported says why `run --no-new-privs` cannot be honoured here.
func NoNewPrivsUnsupported() error { return errors.New("no_new_privs exists only on Linux") }

// RestrictsWithoutNoNewPrivs: Windows has no Landlock and no no_new_privs.
func RestrictsWithoutNoNewPrivs() bool { return true }

func privatePidsProbe() error { return errors.New("PID namespaces exist only on Linux") }

// PidInitMain exists only where PID namespaces do.
func PidInitMain([]string) int {
	fmt.Fprintln(os.Stderr, "octostore-supervisor: PID namespaces exist only on Linux")
	return ExitSoftware
}
