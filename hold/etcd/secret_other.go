//go:build !unix

package etcd

import "github.com/octostore-supervisor/supervisor/hold"

// readSecretFile refuses: the ownership checks of the token file are not
// available to this package on this OS yet, and an unchecked key is not
// loaded silently.
// TODO(lead): use an exported hold.ReadSecretFile (the token file's checks).
func readSecretFile(path, name string) (string, error) {
	return "", &hold.UsageError{Msg: name + " (etcd client key) is supported on Unix only for now; use etcd user:password in OCTOSTORE_TOKEN_FILE", Class: hold.ErrToken}
}
