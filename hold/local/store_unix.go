//go:build unix

package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/hold"
)

// defaultLocalDir is $XDG_RUNTIME_DIR/octostore (a per-user tmpfs the login
// manager creates 0700), else octostore-<euid> under $TMPDIR or /tmp. The
// latter lives in a directory everyone can write to, so the ownership and
// symlink checks of openDir are what keep another user from planting
// it first.
func defaultLocalDir(env hold.LookupEnv) (string, error) {
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
		return stateDirErrorCause(err, "could not inspect local state directory %s: %s", dir, hold.OSErrorText(err))
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

// chmodCreated sets a file we just created to mode despite the umask, so the
// group of a shared store can use it.
func chmodCreated(f *os.File, mode fs.FileMode) error { return f.Chmod(mode) }

func chmodCreatedDir(root *os.Root, name string, mode fs.FileMode) error {
	return root.Chmod(name, mode)
}

// removeFile deletes the file rel of the store.
func (s *Store) removeFile(rel string) error { return s.root.Remove(rel) }

// replaceFile renames from over to, atomically.
func (s *Store) replaceFile(from, to string) error { return s.root.Rename(from, to) }

// entryRules say whose entries a state directory may contain. A file:///
// directory that is setgid, group-writable and not world-writable is *shared
// with its group* (the README's chmod 2770): every entry created in it gets
// the directory's group, so its entries may belong to any member and be
// group-writable when their group is the directory's. Any other directory —
// "local", a private file:/// directory, a group-writable one without setgid
// (whose entries would carry each creator's own group), or a sticky
// world-writable one where anybody could plant an entry — shares nothing: its
// entries must belong to this user (or root) and be writable by nobody else.
// No entry anywhere may be world-writable.
type entryRules struct {
	shareGID int // the directory's group when shared with it; -1 otherwise
}

func entryRulesFor(dir fs.FileInfo, shared bool) entryRules {
	st, ok := dir.Sys().(*syscall.Stat_t)
	if !ok {
		return entryRules{shareGID: -1}
	}
	perm := uint32(st.Mode) & 0o7777
	if !shared || perm&unix.S_ISGID == 0 || perm&0o020 == 0 || perm&0o002 != 0 {
		return entryRules{shareGID: -1}
	}
	return entryRules{shareGID: int(st.Gid)}
}

func (e entryRules) groupShared() bool { return e.shareGID >= 0 }

// check judges one existing entry (lstat or fstat of it); path names it in
// the refusal.
func (e entryRules) check(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stateDirError("could not read the owner of %s", path)
	}
	perm := uint32(st.Mode) & 0o777
	switch {
	case perm&0o002 != 0:
		return stateDirError("%s is writable by every user (mode %04o); refusing it (chmod o-w it, or remove it if you did not create it)", path, perm)
	case e.groupShared() && perm&0o020 != 0 && int(st.Gid) != e.shareGID:
		return stateDirError("%s is writable by group %d, not by the state directory's group %d; refusing it", path, st.Gid, e.shareGID)
	case e.groupShared():
		return nil
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return stateDirError("%s is owned by another user (uid %d) in a state directory not shared with a group; refusing it (share the directory with chmod 2770, or remove the entry)", path, st.Uid)
	case perm&0o020 != 0:
		return stateDirError("%s is writable by its group (mode %04o) in a state directory not shared with a group; refusing it (chmod g-w it)", path, perm)
	}
	return nil
}
