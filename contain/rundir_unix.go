//go:build unix

package contain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// runBase is the system's directory for runtime state, root's, emptied at
// boot: /run on Linux, /var/run on macOS (named by its real path: /var is a
// symlink there, and rootRunDir follows none).
func runBase() string {
	if runtime.GOOS == "darwin" {
		return "/private/var/run"
	}
	return "/run"
}

// runDirName is our own directory in runBase. The helper caches live there
// too (HelperCacheDir), in a directory of their own.
const runDirName = "octostore-supervisor"

// rootRunDir opens runBase()/octostore-supervisor/sub, creating what is
// missing, and returns it open with its path. Every level is opened through
// its parent's descriptor with O_NOFOLLOW, never by path, and checked on the
// descriptor: runBase must be root's and writable by no other user (on macOS
// its group, daemon, may write: that is the system's layout); ours and sub
// must be root's, writable by root alone. Ours gets mode 0711, so that a
// worker of another user may pass through to a name it was given but list
// nothing; sub gets mode. What is wrong is refused, naming the path; nothing
// is ever chowned or chmodded but what was opened and checked.
func rootRunDir(sub string, mode uint32) (*os.File, string, error) {
	base := runBase()
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", base, err)
	}
	dir := os.NewFile(uintptr(fd), base)
	if err := checkRootDir(dir, runtime.GOOS == "darwin"); err != nil {
		dir.Close()
		return nil, "", err
	}
	for _, lvl := range []struct {
		name string
		mode uint32
	}{{runDirName, 0o711}, {sub, mode}} {
		next, err := ownSubdir(dir, lvl.name, lvl.mode)
		dir.Close()
		if err != nil {
			return nil, "", err
		}
		dir = next
	}
	return dir, dir.Name(), nil
}

// ownSubdir creates (if missing) and opens the directory name below parent,
// checks it is root's and writable by root alone, and sets its mode.
func ownSubdir(parent *os.File, name string, mode uint32) (*os.File, error) {
	path := filepath.Join(parent.Name(), name)
	pfd := int(parent.Fd())
	if err := unix.Mkdirat(pfd, name, mode); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s (it must be a directory, not a symlink): %w", path, err)
	}
	dir := os.NewFile(uintptr(fd), path)
	if err := checkRootDir(dir, false); err != nil {
		dir.Close()
		return nil, err
	}
	// Mkdirat honours the umask, and an older version made ours 0700.
	if err := unix.Fchmod(fd, mode); err != nil {
		dir.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return dir, nil
}

// checkRootDir judges an open directory: root's, and writable by nobody else
// (groupMay: except by its group, for the system's own base directory).
func checkRootDir(dir *os.File, groupMay bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return fmt.Errorf("fstat %s: %w", dir.Name(), err)
	}
	others := uint32(0o022)
	if groupMay {
		others = 0o002
	}
	perm := uint32(st.Mode) & 0o7777
	if st.Uid != 0 || perm&others != 0 {
		return fmt.Errorf("%s must be root's and writable by root alone (owner %d, mode %04o); remove it", dir.Name(), st.Uid, perm)
	}
	return nil
}
