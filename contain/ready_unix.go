//go:build unix

package contain

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// readySub is where a root supervisor makes its workers' ready directories,
// below rootRunDir.
const readySub = "ready"

// makeReadyDir creates the worker's private ready directory, which holds
// nothing but the ready file it may create, and returns its path.
//
// A root supervisor never makes it in $TMPDIR: a directory another user may
// write to is one in which that user can swap the fresh directory for a
// symlink before it is handed over, and have root chown what the link names.
// It makes it in root's own runBase()/octostore-supervisor/ready, which only
// root may write to, and hands it to the worker's user through the
// descriptor it created (fchown), never by path.
//
// The name is 128 random bits, and ready/ and its parent are mode 0711: a
// worker reaches its own directory by the path it was given, but no process
// can list the others, and none can guess them. That, not uid permissions,
// keeps runs that share a worker user (--share-worker-user) out of each
// other's ready directory: only processes that can read this worker's
// environment (its own user's, where they can see it) learn the name.
//
// A supervisor that is not root keeps it in $TMPDIR, which is its own
// user's business: its worker runs as that same user.
func makeReadyDir(iso Isolation) (string, error) {
	if os.Geteuid() != 0 {
		return os.MkdirTemp("", "octostore-ready-")
	}
	parent, path, err := rootRunDir(readySub, 0o711)
	if err != nil {
		return "", err
	}
	defer parent.Close()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := hex.EncodeToString(b[:])
	path = filepath.Join(path, name)
	if err := unix.Mkdirat(int(parent.Fd()), name, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	fd, err := unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return path, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if iso.User != nil {
		if err := unix.Fchown(fd, int(iso.User.Uid), int(iso.User.Gid)); err != nil {
			return path, fmt.Errorf("give %s to the worker user %s: %w", path, iso.User.Name, err)
		}
	}
	return path, nil
}
