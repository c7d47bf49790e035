//go:build unix

package etcd

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/hold"
)

// readSecretFile reads a client key with the token file's checks: opened
// without following a final symlink, then on the descriptor a regular file,
// owned by the effective uid, no group/other permission bits.
// TODO(lead): export hold's readTokenFile with the variable name as a
// parameter (hold.ReadSecretFile) and use it here and on Windows.
func readSecretFile(path, name string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", &hold.UsageError{Msg: "could not open " + name + " safely: " + err.Error(), Class: hold.ErrToken, Cause: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", &hold.UsageError{Msg: "could not inspect " + name + ": " + err.Error(), Class: hold.ErrToken, Cause: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", &hold.UsageError{Msg: name + " must be a regular file", Class: hold.ErrToken}
	case int(st.Uid) != os.Geteuid():
		return "", &hold.UsageError{Msg: name + " must be owned by the current user", Class: hold.ErrToken}
	case st.Mode&0o077 != 0:
		return "", &hold.UsageError{Msg: name + " must have owner-only permissions (chmod 600)", Class: hold.ErrToken}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", &hold.UsageError{Msg: "could not read " + name + ": " + err.Error(), Class: hold.ErrToken, Cause: err}
	}
	return string(b), nil
}
