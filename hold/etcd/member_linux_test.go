//go:build linux

package etcd

import (
	"context"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// cluster is internal/testkit/etcdtest's three-member cluster with this package's
// helpers.
type cluster struct{ *etcdtest.Cluster }

// eachServer runs body against a fresh cluster of every server build
// (Debian's etcd and the pinned 3.6).
func eachServer(t *testing.T, body func(t *testing.T, m *cluster)) {
	for _, s := range etcdtest.Servers(t) {
		t.Run(s.Name, func(t *testing.T) {
			body(t, &cluster{etcdtest.Start(t, etcdtest.Options{Server: s})})
		})
	}
}

// env allows Debian's 3.4.23 for this test only.
func oldServerEnv(k string) (string, bool) {
	if k == envAllowOldServer {
		return "1", true
	}
	return "", false
}

func (m *cluster) authority(t *testing.T, prefix string) *Authority {
	t.Helper()
	a, err := Open(m.URL(prefix), oldServerEnv, hold.Transport{})
	require.NoError(t, err)
	a.Diag = &proctest.SyncBuffer{}
	t.Cleanup(func() { a.Close() })
	return a
}

// running is one Hold in a goroutine.
type running struct {
	out, diag proctest.SyncBuffer
	sigs      chan os.Signal
	code      chan int
	spec      hold.HoldSpec
}

func startHold(t *testing.T, a *Authority, spec hold.HoldSpec) *running {
	t.Helper()
	r := &running{sigs: make(chan os.Signal, 2), code: make(chan int, 1)}
	if spec.TTL == 0 {
		spec.TTL = 10 * time.Second
	}
	spec.Out, spec.Diag = &r.out, &r.diag
	r.spec = spec
	go func() { r.code <- a.Hold(context.Background(), spec, r.sigs) }()
	t.Cleanup(func() {
		select {
		case <-r.code:
		default:
			r.sigs <- syscall.SIGTERM
			select {
			case <-r.code:
			case <-time.After(10 * time.Second):
				t.Errorf("hold did not end after SIGTERM; out:\n%s", r.out.String())
			}
		}
	})
	return r
}

func election(name, candidate string) hold.HoldSpec {
	return hold.HoldSpec{Kind: hold.KindElection, Name: name, Candidate: candidate}
}

func lock(name string) hold.HoldSpec { return hold.HoldSpec{Kind: hold.KindLock, Name: name} }

// events parses the lines so far, each validated by the supervisor's own
// stream reader (the golden shape of every line).
func (r *running) events(t *testing.T) []map[string]any {
	t.Helper()
	kind := events.Election
	if r.spec.Kind == hold.KindLock {
		kind = events.Lock
	}
	st := events.NewStream(events.Expect{Kind: kind, Name: r.spec.Name, Candidate: r.spec.Candidate})
	var out []map[string]any
	for _, l := range r.out.Lines() {
		_, err := st.Next([]byte(l))
		require.NoError(t, err, "line %q", l)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		out = append(out, m)
	}
	return out
}

// waitEvent waits for the first event named name and returns it.
func (r *running) waitEvent(t *testing.T, name string, timeout time.Duration) map[string]any {
	t.Helper()
	var got map[string]any
	proctest.WaitFor(t, timeout, "event "+name+" (out so far: "+r.out.String()+" diag: "+r.diag.String()+")", func() bool {
		for _, e := range r.events(t) {
			if e["event"] == name {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

func (r *running) count(t *testing.T, name string) int {
	n := 0
	for _, e := range r.events(t) {
		if e["event"] == name {
			n++
		}
	}
	return n
}

func (r *running) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case c := <-r.code:
		r.code <- c
		return c
	case <-time.After(timeout):
		t.Fatalf("hold did not end within %v; out:\n%s\ndiag:\n%s", timeout, r.out.String(), r.diag.String())
		return 0
	}
}

func term(e map[string]any) int64 { return int64(e["term"].(float64)) }

// keys lists the keys under prefix with their create revisions.
func keys(t *testing.T, c *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	out := map[string]int64{}
	for _, kv := range g.Kvs {
		out[string(kv.Key)] = kv.CreateRevision
	}
	return out
}
