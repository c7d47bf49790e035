package contain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform/procid"
	"github.com/octostore-supervisor/supervisor/platform/survivor"
)

// The survivor record as the lean supervisor keeps it, in the state
// directory handed over by descriptor (handedDir): written, read back and
// removed through the directory it was handed, even once its path names
// another; an entry someone else could have written is refused, not read.
func TestHandedDirKeepsTheSurvivorRecord(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.MkdirAll(filepath.Join(state, "supervised"), 0o700))
	// A raw descriptor, as the handover leaves one: openHandedDir owns it. One
	// from os.Open would have a second owner, whose finalizer closed the
	// number again after dir.Close, under whatever reused it (CI once: the
	// TempDir cleanup's unlinkat, EBADF).
	fd, err := unix.Open(state, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	dir, err := openHandedDir(fd, state)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dir.Close()) })

	// The path now names another directory; the record stays where it was.
	moved := state + ".moved"
	require.NoError(t, os.Rename(state, moved))
	require.NoError(t, os.MkdirAll(filepath.Join(state, "supervised"), 0o700))

	rec := survivor.New(dir, "supervised/x.survivors", survivor.Key{Authority: "explicit-hold", Kind: "lock", Name: "job"})
	ids, err := rec.Survivors()
	require.NoError(t, err)
	require.Empty(t, ids)
	want := []procid.ID{{Pid: 7, Start: 70}}
	require.NoError(t, rec.Add(want))
	ids, err = rec.Survivors()
	require.NoError(t, err)
	require.Equal(t, want, ids)
	st, err := os.Stat(filepath.Join(moved, "supervised", "x.survivors"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.NoFileExists(t, filepath.Join(state, "supervised", "x.survivors"))

	planted := filepath.Join(moved, "supervised", "x.survivors")
	require.NoError(t, os.Chmod(planted, 0o620))
	_, err = rec.Survivors()
	require.ErrorContains(t, err, "writable by its group or every user")
	require.NoError(t, os.Chmod(planted, 0o600))
	require.NoError(t, os.Chown(planted, 65534, 65534))
	_, err = rec.Survivors()
	require.ErrorContains(t, err, "owned by another user (uid 65534)")

	require.NoError(t, rec.Remove())
	require.NoFileExists(t, planted)
	ids, err = rec.Survivors()
	require.NoError(t, err)
	require.Empty(t, ids)
}
