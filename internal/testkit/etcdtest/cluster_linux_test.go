package etcdtest

import (
	"context"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// The tests start etcd members and fenceworkers; Main makes this process the
// subreaper and proves at the end that nothing they started is alive (each
// cluster also proves its own members gone at its cleanup).
func TestMain(m *testing.M) {
	proctest.Main(m, func(tmp string) error {
		var err error
		fenceworker, err = proctest.Build(tmp, "../../../testbin/fenceworker")
		return err
	})
}

var fenceworker proctest.Binary

// One cluster per server build, with proxies, through every fault the
// harness offers, in sequence: a cluster start costs a few seconds of CI's
// two cores.
func TestCluster(t *testing.T) {
	for _, srv := range Servers(t) {
		t.Run(srv.Name, func(t *testing.T) {
			c := Start(t, Options{Server: srv, Proxy: true})
			v := c.ServerVersion(t)
			want := map[string]string{"debian": "3.4.", "3.6": "3.6."}[srv.Name]
			require.True(t, strings.HasPrefix(v, want), "server %s reports version %s, want %s*", srv.Path, v, want)
			require.Equal(t, "etcd://"+strings.Join(c.Endpoints(), ",")+"/octostore", c.URL("/octostore"))
			cli := c.Client(t)
			put(t, cli, "k", "v1")

			followerStopCont(t, c, cli)
			restartKeepsData(t, c, cli)
			leaderKillElects(t, c, cli)
			compactCancelsOldWatch(t, c, cli)
			blackholeAndReset(t, c, cli)
		})
	}
}

// put writes k, retrying: the client's connection may be to a member that
// was just killed or stopped, and a Put is not retried by the client itself
// (it is not idempotent). The quorum must take it within the bound.
func put(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	var err error
	proctest.WaitFor(t, 20*time.Second, "a quorum to take Put "+k, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = cli.Put(ctx, k, v)
		return err == nil
	})
}

// A stopped follower leaves a quorum: writes go on; after Cont it is back
// with the same leader.
func followerStopCont(t *testing.T, c *Cluster, cli *clientv3.Client) {
	leader := c.Leader(t)
	f := c.Member(c.Follower(t))
	f.Stop()
	require.True(t, proctest.AllThreadsStopped(f.Pid()))
	require.Equal(t, leader, c.Leader(t), "the running members still agree on the leader")
	put(t, clientFor(t, c, c.Member(leader)), "during-stop", "1")
	f.Cont()
	require.Equal(t, leader, c.Leader(t), "the resumed follower follows the same leader")
}

// A killed follower comes back on its own data: it has a key written before
// the kill in its local store, and catches up with one written while it was
// down.
func restartKeepsData(t *testing.T, c *Cluster, cli *clientv3.Client) {
	f := c.Member(c.Follower(t))
	put(t, cli, "before-kill", "1")
	old := f.Pid()
	st, err := proctest.Stat(old)
	require.NoError(t, err)
	f.Kill()
	require.False(t, proctest.Record{Pid: old, Start: st.StartTicks}.Alive(), "the killed member is still alive")
	put(t, cli, "while-down", "1")
	f.Restart(t)
	require.NotEqual(t, old, f.Pid())
	local := clientFor(t, c, f)
	proctest.WaitFor(t, 30*time.Second, "the restarted member to serve both keys from its own store", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r1, err1 := local.Get(ctx, "before-kill", clientv3.WithSerializable())
		r2, err2 := local.Get(ctx, "while-down", clientv3.WithSerializable())
		return err1 == nil && err2 == nil && r1.Count == 1 && r2.Count == 1
	})
}

// clientFor is a client of one member alone, bypassing its proxy.
func clientFor(t *testing.T, c *Cluster, m *Member) *clientv3.Client {
	t.Helper()
	cli := c.newClient(t, []string{m.ClientAddr()})
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Killing the leader elects another one among the two left; the old leader
// restarts as a follower.
func leaderKillElects(t *testing.T, c *Cluster, cli *clientv3.Client) {
	old := c.Leader(t)
	killed := time.Now()
	c.Member(old).Kill()
	next := c.Leader(t)
	t.Logf("leader m%d killed: m%d elected in %v", old, next, time.Since(killed).Round(time.Millisecond))
	require.NotEqual(t, old, next)
	put(t, cli, "after-leader-kill", "1")
	c.Member(old).Restart(t)
	require.Equal(t, next, c.Leader(t), "the restarted old leader follows")
}

// Compact makes a watch from a revision before it fail with ErrCompacted.
func compactCancelsOldWatch(t *testing.T, c *Cluster, cli *clientv3.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.Put(ctx, "w", "1")
	require.NoError(t, err)
	put(t, cli, "w", "2")
	rev := c.Compact(t)
	require.Greater(t, rev, r.Header.Revision)
	wr, ok := <-cli.Watch(ctx, "w", clientv3.WithRev(r.Header.Revision))
	require.True(t, ok, "the watch channel closed without a response")
	require.ErrorIs(t, wr.Err(), rpctypes.ErrCompacted)
	require.Equal(t, rev, wr.CompactRevision)
}

// Blackholed proxies make a Get with a 500 ms deadline time out, Pass
// restores it; Reset ends a live connection with an RST.
func blackholeAndReset(t *testing.T, c *Cluster, cli *clientv3.Client) {
	for i := range members {
		c.Proxy(i).Blackhole()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	began := time.Now()
	_, err := cli.Get(ctx, "k")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a Get through blackholed proxies")
	require.Less(t, time.Since(began), 5*time.Second, "the Get outlived its deadline by far")
	for i := range members {
		c.Proxy(i).Pass()
	}
	proctest.WaitFor(t, 30*time.Second, "a Get through the proxies again", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := cli.Get(ctx, "k")
		return err == nil
	})

	// A live connection: an HTTP/1.1 request the member answers (etcd serves
	// /version on its client port) and keeps open.
	conn, err := net.Dial("tcp", c.Proxy(0).Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /version HTTP/1.1\r\nHost: etcd\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	head := make([]byte, len("HTTP/1.1 200"))
	_, err = io.ReadFull(conn, head)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200", string(head))
	c.Proxy(0).Reset()
	// The rest of the response may still be buffered here; after it, the RST.
	_, err = io.Copy(io.Discard, conn)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	proctest.WaitFor(t, 30*time.Second, "a Get through the proxies after the reset", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := cli.Get(ctx, "k")
		return err == nil
	})
}
