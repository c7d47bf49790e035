package contain

import "os"

// makeReadyDir creates the worker's private ready directory in %TEMP%: a
// Windows worker runs under the supervisor's own account (no --worker-user),
// so nothing is handed to another user there.
func makeReadyDir(Isolation) (string, error) {
	return os.MkdirTemp("", "octostore-ready-")
}
