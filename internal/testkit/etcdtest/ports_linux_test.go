package etcdtest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A reserved base is no one else's until released, in this process or
// another (an OFD lock per base); OCTOSTORE_ETCD_PORT_BASE is honoured but
// never lets a cluster onto 2379/2380.
func TestReservePorts(t *testing.T) {
	a, err := reservePorts()
	require.NoError(t, err)
	b, err := reservePorts()
	require.NoError(t, err)
	require.NotEqual(t, a.base, b.base)
	b.release()

	t.Setenv(portsEnv, strconv.Itoa(a.base))
	_, err = reservePorts()
	require.ErrorContains(t, err, "taken by another test cluster")
	a.release()
	c, err := reservePorts()
	require.NoError(t, err, "the base is free again once released")
	require.Equal(t, a.base, c.base)
	require.Equal(t, []int{a.base + 1, a.base + 11}, []int{c.client(0), c.peer(0)})
	c.release()

	for _, bad := range []string{"2370", "2379", "x", "80", "65530"} {
		t.Setenv(portsEnv, bad)
		_, err = reservePorts()
		require.ErrorContains(t, err, portsEnv, bad)
	}
}
