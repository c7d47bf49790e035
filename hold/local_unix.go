//go:build unix

package hold

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// defaultLocalDir is $XDG_RUNTIME_DIR/octostore (a per-user tmpfs the login
// manager creates 0700), else octostore-<euid> under $TMPDIR or /tmp. The
// latter lives in a directory everyone can write to, so the ownership and
// symlink checks of openLocalStore are what keep another user from planting
// it first.
func defaultLocalDir(env LookupEnv) (string, error) {
	get := func(k string) string {
		if env == nil {
			return ""
		}
		v, _ := env(k)
		return v
	}
	if v := get("XDG_RUNTIME_DIR"); filepath.IsAbs(v) {
		return filepath.Join(v, "octostore"), nil
	}
	tmp := "/tmp"
	if v := get("TMPDIR"); filepath.IsAbs(v) {
		tmp = v
	}
	return filepath.Join(tmp, "octostore-"+strconv.Itoa(os.Geteuid())), nil
}

// dirFromFileURLPath turns the decoded path of a file URL into a directory.
func dirFromFileURLPath(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p), true
}

// fileURLPath is the URL path of a directory.
func fileURLPath(dir string) string { return dir }

// checkStateDirOwnership judges the opened directory (fstat, not the path).
// A private store must be ours and writable by nobody else; a shared one may
// belong to anyone and be group-writable, but a world-writable one needs the
// sticky bit so nobody can delete or rename another user's files.
func checkStateDirOwnership(d *os.File, dir string, shared bool) error {
	fi, err := d.Stat()
	if err != nil {
		return stateDirErrorCause(err, "could not inspect local state directory %s: %s", dir, osErrorText(err))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stateDirError("could not read the owner of local state directory %s", dir)
	}
	perm := uint32(st.Mode) & 0o7777
	if !shared {
		if int(st.Uid) != os.Geteuid() {
			return stateDirError("local state directory %s is owned by another user (uid %d); refusing it", dir, st.Uid)
		}
		if perm&0o022 != 0 {
			return stateDirError("local state directory %s is writable by other users (mode %04o); chmod 700 it", dir, perm)
		}
		return nil
	}
	if perm&0o002 != 0 && perm&unix.S_ISVTX == 0 {
		return stateDirError("local state directory %s is world-writable without the sticky bit (mode %04o); refusing it", dir, perm)
	}
	return nil
}

// fileLinks is the open file's link count: 0 once it was unlinked or renamed
// over.
func fileLinks(f *os.File) (uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no link count")
	}
	return uint64(st.Nlink), nil
}

// processAlive reports whether pid may still be running: signal 0 succeeds,
// or fails only for lack of permission (another user's process). A zombie
// counts as alive until its parent reaps it.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// syncDir makes created entries durable. A few file systems cannot fsync a
// directory (EINVAL); they have nothing to make durable that way.
func syncDir(d *os.File) error {
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// chmodCreated sets a file we just created to mode despite the umask, so the
// group of a shared store can use it.
func chmodCreated(f *os.File, mode fs.FileMode) error { return f.Chmod(mode) }

func chmodCreatedDir(root *os.Root, name string, mode fs.FileMode) error {
	return root.Chmod(name, mode)
}

// removeFile deletes the file rel of the store.
func (s *LocalStore) removeFile(rel string) error { return s.root.Remove(rel) }

// replaceFile renames from over to, atomically.
func (s *LocalStore) replaceFile(from, to string) error { return s.root.Rename(from, to) }
