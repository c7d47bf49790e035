package platform

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// A taken host lock's name says whose socket holds it (here ours); a free
// one says nothing. contain's TestInterlockSquattedByAnotherUserDoesNotBlock
// shows another user's socket.
func TestHostLockHolderNamesTheOwner(t *testing.T) {
	key := "platform test " + t.Name()
	_, known, err := HostLockHolder(key)
	require.NoError(t, err)
	require.False(t, known, "a free name has no holder")

	s, err := OpenHostLock()
	require.NoError(t, err)
	defer s.Close()
	ok, err := TryHostLock(s, key)
	require.NoError(t, err)
	require.True(t, ok)
	other, err := OpenHostLock()
	require.NoError(t, err)
	defer other.Close()
	ok, err = TryHostLock(other, key)
	require.NoError(t, err)
	require.False(t, ok, "a held name cannot be taken twice")

	uid, known, err := HostLockHolder(key)
	require.NoError(t, err)
	require.True(t, known)
	require.Equal(t, os.Geteuid(), uid)

	require.NoError(t, s.Close())
	_, known, err = HostLockHolder(key)
	require.NoError(t, err)
	require.False(t, known, "a closed socket holds nothing")
}
