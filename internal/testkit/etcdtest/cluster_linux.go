package etcdtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

const (
	members = 3
	// readyLimit bounds every wait for the cluster: generous, since CI's two
	// cores are shared; a healthy start takes a few seconds.
	readyLimit = 60 * time.Second
)

// Options configure Start. The zero value runs Debian's etcd with the
// spec's timing.
type Options struct {
	// Server is the build to run; zero means the first of Servers(t).
	Server Server
	// ElectionTimeout and Heartbeat are the members' raft timing; zero means
	// 1000 ms and 100 ms, the timing the spec's measurements used.
	ElectionTimeout, Heartbeat time.Duration
	// Proxy puts a Proxy in front of each member's client port; Endpoints,
	// URL and Client then go through the proxies.
	Proxy bool
	// Unix has each member serve clients on a unix socket too
	// (Member.Socket, UnixURL), beside its port.
	Unix bool
}

// Cluster is a running three-member etcd cluster on loopback.
type Cluster struct {
	t       testing.TB
	opts    Options
	server  Server
	ports   ports
	dir     string
	members []*Member
	proxies []*Proxy
	direct  *clientv3.Client // the harness's own client, straight to the members

	mu      sync.Mutex
	started []proctest.Record // every process ever started, restarts included
}

// Start runs a three-member cluster and returns once every member reports the
// same leader and a Put has succeeded. Cleanup is registered with t.Cleanup.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Server == (Server{}) {
		opts.Server = Servers(t)[0]
	}
	if opts.ElectionTimeout == 0 {
		opts.ElectionTimeout = time.Second
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 100 * time.Millisecond
	}
	began := time.Now()
	p, err := reservePorts()
	if err != nil {
		t.Fatalf("etcd cluster ports: %v", err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "octostore-etcdtest-")
	if err != nil {
		p.release()
		t.Fatalf("etcd data directory on /dev/shm: %v", err)
	}
	c := &Cluster{t: t, opts: opts, server: opts.Server, ports: p, dir: dir}
	t.Cleanup(c.cleanup)
	for i := range members {
		c.members = append(c.members, &Member{c: c, i: i, name: fmt.Sprintf("m%d", i), dir: fmt.Sprintf("%s/m%d", dir, i)})
	}
	var direct []string
	for _, m := range c.members {
		if err := m.start(); err != nil {
			t.Fatalf("%v", err)
		}
		direct = append(direct, m.ClientAddr())
	}
	c.direct = c.newClient(t, direct)
	if opts.Proxy {
		for _, m := range c.members {
			c.proxies = append(c.proxies, NewProxy(t, m.ClientAddr()))
		}
	}
	c.Leader(t)
	c.waitPut(t)
	t.Logf("etcd cluster (%s, %s) ready in %v on ports %d+", c.server.Name, c.server.Path, time.Since(began).Round(time.Millisecond), p.base)
	return c
}

func (c *Cluster) newClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client for %v: %v", endpoints, err)
	}
	return cli
}

// waitPut waits until a Put through the harness's client succeeds.
func (c *Cluster) waitPut(t testing.TB) {
	t.Helper()
	var last error
	proctest.WaitFor(t, readyLimit, "a Put to succeed", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, last = c.direct.Put(ctx, "/etcdtest/ready", "1")
		return last == nil
	})
}

func (c *Cluster) record(r proctest.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = append(c.started, r)
}

// Member returns member i (0, 1 or 2).
func (c *Cluster) Member(i int) *Member { return c.members[i] }

// Endpoints are the client addresses (host:port) a client should use: the
// proxies' when the cluster has them, else the members'.
func (c *Cluster) Endpoints() []string {
	var out []string
	for i, m := range c.members {
		if c.proxies != nil {
			out = append(out, c.proxies[i].Addr())
		} else {
			out = append(out, m.ClientAddr())
		}
	}
	return out
}

// Proxy returns the proxy in front of member i's client port; it fails the
// test when the cluster was started without Options.Proxy.
func (c *Cluster) Proxy(i int) *Proxy {
	c.t.Helper()
	if c.proxies == nil {
		c.t.Fatalf("the cluster has no proxies: start it with Options{Proxy: true}")
	}
	return c.proxies[i]
}

// URL is the authority's --server for this cluster,
// etcd://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/prefix ("" for no prefix).
func (c *Cluster) URL(prefix string) string {
	u := "etcd://" + strings.Join(c.Endpoints(), ",")
	if prefix = strings.TrimPrefix(prefix, "/"); prefix != "" {
		u += "/" + prefix
	}
	return u
}

// UnixURL is the authority's --server for the members' unix sockets
// (Options.Unix), etcd+unix://%2F…sock,…/prefix ("" for no prefix).
func (c *Cluster) UnixURL(prefix string) string {
	var socks []string
	for _, m := range c.members {
		socks = append(socks, url.PathEscape(m.Socket()))
	}
	u := "etcd+unix://" + strings.Join(socks, ",")
	if prefix = strings.TrimPrefix(prefix, "/"); prefix != "" {
		u += "/" + prefix
	}
	return u
}

// Client is a client of the cluster through Endpoints, closed when t ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli := c.newClient(t, c.Endpoints())
	t.Cleanup(func() { cli.Close() })
	return cli
}

// MemberClient is a client of member i alone, on its own client port (never
// its proxy), closed when t ends: calls through it cannot land on another
// member, frozen or cut off.
func (c *Cluster) MemberClient(t testing.TB, i int) *clientv3.Client {
	t.Helper()
	cli := c.newClient(t, []string{c.members[i].ClientAddr()})
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Leader waits until every running member (not killed, not stopped) reports
// the same leader, itself one of them, and returns its index.
func (c *Cluster) Leader(t testing.TB) int {
	t.Helper()
	leader := -1
	proctest.WaitFor(t, readyLimit, "every running member to report the same running leader", func() bool {
		leader = c.agreedLeader()
		return leader >= 0
	})
	return leader
}

func (c *Cluster) agreedLeader() int {
	ids := map[uint64]int{}
	var leaders []uint64
	for i, m := range c.members {
		if !m.running() {
			continue
		}
		st, err := m.status()
		if err != nil || st.Leader == 0 {
			return -1
		}
		ids[st.Header.MemberId] = i
		leaders = append(leaders, st.Leader)
	}
	if len(leaders) == 0 {
		return -1
	}
	for _, l := range leaders[1:] {
		if l != leaders[0] {
			return -1
		}
	}
	if i, ok := ids[leaders[0]]; ok {
		return i
	}
	return -1
}

// Follower returns the index of a running member that is not the leader.
func (c *Cluster) Follower(t testing.TB) int {
	t.Helper()
	leader := c.Leader(t)
	for i, m := range c.members {
		if i != leader && m.running() {
			return i
		}
	}
	t.Fatalf("no running follower: only the leader m%d runs", leader)
	return -1
}

// Compact compacts the keyspace to the current revision, physically, and
// returns that revision.
func (c *Cluster) Compact(t testing.TB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.direct.Get(ctx, "/etcdtest/ready")
	if err != nil {
		t.Fatalf("read the current revision: %v", err)
	}
	rev := resp.Header.Revision
	if _, err := c.direct.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact to revision %d: %v", rev, err)
	}
	return rev
}

// ServerVersion is the version the leader reports, e.g. "3.4.23".
func (c *Cluster) ServerVersion(t testing.TB) string {
	t.Helper()
	st, err := c.members[c.Leader(t)].status()
	if err != nil {
		t.Fatalf("etcd status: %v", err)
	}
	return st.Version
}

// cleanup ends every member (SIGCONT, SIGTERM, SIGKILL after 5 s), proves
// every process the cluster started gone, and removes the data.
func (c *Cluster) cleanup() {
	t := c.t
	// Followers first, then the leader: a leader asked to stop tries to hand
	// its leadership over, and waits in vain for followers that are stopping
	// too. Alone, it stops at once.
	leader := -1
	if c.direct != nil {
		leader = c.agreedLeader()
	}
	for _, last := range []bool{false, true} {
		var batch []*Member
		for i, m := range c.members {
			if (i == leader) == last {
				batch = append(batch, m)
			}
		}
		for _, m := range batch {
			m.terminate()
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, m := range batch {
			m.reap(t, deadline)
		}
	}
	if c.direct != nil {
		c.direct.Close()
	}
	c.mu.Lock()
	for _, r := range proctest.Alive(c.started) {
		t.Errorf("etcd member process %v survived the cluster's cleanup", r)
	}
	c.mu.Unlock()
	if t.Failed() {
		for _, m := range c.members {
			t.Logf("member %s log (end):\n%s", m.name, m.logTail())
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		t.Errorf("remove the cluster's data: %v", err)
	}
	c.ports.release()
}
