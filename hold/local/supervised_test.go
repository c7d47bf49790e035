package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform/procid"
)

// The survivor record through the store (survivor.Dir): none at first, then
// what was added, accumulating, in one file named by the key's hash in the
// private "supervised" directory; gone once removed, and removing nothing is
// no error. A malformed record is an error naming the file, never "none".
func TestSurvivorRecordInTheStore(t *testing.T) {
	env := localEnv(map[string]string{localDirVar: tempDir(t)})
	store, err := OpenPrivate(env)
	require.NoError(t, err)
	rec, interlock, err := store.OpenSupervised(ExplicitHoldAuthority, hold.KindLock, "job-7", true)
	require.NoError(t, err)
	t.Cleanup(func() {
		interlock.Close()
		require.NoError(t, rec.Close())
	})

	ids, err := rec.Survivors()
	require.NoError(t, err)
	require.Empty(t, ids)

	a, b := procid.ID{Pid: 41, Start: 7}, procid.ID{Pid: 42, Start: 8}
	require.NoError(t, rec.Add([]procid.ID{a}))
	require.NoError(t, rec.Add([]procid.ID{b}))
	ids, err = rec.Survivors()
	require.NoError(t, err)
	require.Equal(t, []procid.ID{a, b}, ids)
	require.Equal(t, filepath.Join(store.Dir(), supervisedDir), filepath.Dir(rec.Path()))
	dir, dirPath, rel, key := rec.Handover()
	require.NotNil(t, dir)
	require.Equal(t, store.Dir(), dirPath)
	require.Equal(t, rec.Path(), store.join(rel))
	require.Equal(t, "job-7", key.Name)

	require.NoError(t, os.WriteFile(rec.Path(), []byte("{not json"), 0o600))
	_, err = rec.Survivors()
	require.ErrorContains(t, err, rec.Path())
	require.ErrorContains(t, err, "malformed")

	require.NoError(t, rec.Remove())
	require.NoError(t, rec.Remove())
	ids, err = rec.Survivors()
	require.NoError(t, err)
	require.Empty(t, ids)
}
