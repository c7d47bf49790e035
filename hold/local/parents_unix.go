//go:build unix

package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/hold"
)

// maxLinks bounds the symlinks checkParents follows, as the kernel's
// path walk does (MAXSYMLINKS).
const maxLinks = 40

// checkParents refuses, for root, a private state directory (dir) below a
// directory another user could change. Such a user could rename the state
// away between two runs (the next leader then got term 1 again: the fencing
// counter, the survivor records and the interlocks were gone), or swap in
// state of their own. Every directory on the way to dir, through the
// symlinks it takes, must be root's, and writable by nobody else unless it
// is sticky (then nobody else can rename or delete what root owns in it,
// and the next step is checked to be root's); every symlink on the way must
// be root's. dir itself is openDir's to judge. Other users' state is their
// own business, and their TMPDIR is often a directory of theirs in a shared
// one; only root is refused.
func checkParents(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	cur, rest := "/", strings.Split(strings.Trim(filepath.Dir(dir), "/"), "/")
	if err := parentOK(dir, cur); err != nil {
		return err
	}
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // openDir says what is missing
		}
		if err != nil {
			return stateDirErrorCause(err, "could not inspect %s, on the way to local state directory %s: %s", next, dir, hold.OSErrorText(err))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if err := parentOK(dir, next); err != nil {
				return err
			}
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return stateDirError("too many symbolic links on the way to local state directory %s", dir)
		}
		if err := ownedByRoot(dir, next, fi); err != nil {
			return err
		}
		target, err := os.Readlink(next)
		if err != nil {
			return stateDirErrorCause(err, "could not read the symbolic link %s, on the way to local state directory %s: %s", next, dir, hold.OSErrorText(err))
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return nil
}

// parentOK judges one directory on the way to dir.
func parentOK(dir, p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return stateDirErrorCause(err, "could not inspect %s, on the way to local state directory %s: %s", p, dir, hold.OSErrorText(err))
	}
	if !fi.IsDir() {
		return stateDirError("%s, on the way to local state directory %s, is not a directory", p, dir)
	}
	if err := ownedByRoot(dir, p, fi); err != nil {
		return err
	}
	perm := uint32(fi.Sys().(*syscall.Stat_t).Mode) & 0o7777
	if perm&0o022 != 0 && perm&unix.S_ISVTX == 0 {
		return stateDirError("local state directory %s is below %s, which other users may write to (mode %04o) and which is not sticky: they could rename root's state away (its fencing counter, survivor records and interlocks); refusing it (set XDG_RUNTIME_DIR or TMPDIR to a directory only root may write to)", dir, p, perm)
	}
	return nil
}

// ownedByRoot refuses a directory or symlink on the way to dir that another
// user owns: its owner could change it.
func ownedByRoot(dir, p string, fi fs.FileInfo) error {
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		return stateDirError("local state directory %s is below %s, which belongs to uid %d: that user could rename root's state away (its fencing counter, survivor records and interlocks); refusing it (set XDG_RUNTIME_DIR or TMPDIR to a directory only root may write to)", dir, p, uid)
	}
	return nil
}
