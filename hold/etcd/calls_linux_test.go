//go:build linux

package etcd

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/octostore-supervisor/supervisor/hold"
)

// callAudit records every gRPC call the authority makes and what is wrong
// with it (invariants 2, 4 and 5).
type callAudit struct {
	mu       sync.Mutex
	methods  map[string]int
	problems []string
}

func (c *callAudit) note(method, problem string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.methods[method]++
	if problem != "" {
		c.problems = append(c.problems, method+": "+problem)
	}
}

// check: WithRequireLeader on everything, and a deadline of at most one
// attempt on everything but the long-lived watch stream.
func check(ctx context.Context, needDeadline bool) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	if v := md.Get("hasleader"); len(v) != 1 || v[0] != "true" {
		return "no WithRequireLeader"
	}
	dl, ok := ctx.Deadline()
	if needDeadline && (!ok || time.Until(dl) > attemptCap) {
		return fmt.Sprintf("deadline %v (set %v) beyond one attempt", time.Until(dl), ok)
	}
	return ""
}

func (c *callAudit) options() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		problem := check(ctx, true)
		if r, ok := req.(*pb.RangeRequest); ok && r.Serializable {
			problem += " serializable read"
		}
		c.note(method, problem)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		c.note(method, check(ctx, method != "/etcdserverpb.Watch/Watch"))
		cs, err := streamer(ctx, desc, cc, method, opts...)
		return &watchSpy{ClientStream: cs, audit: c}, err
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// watchSpy sees every watch creation: never from revision 0.
type watchSpy struct {
	grpc.ClientStream
	audit *callAudit
}

func (w *watchSpy) SendMsg(m any) error {
	if r, ok := m.(*pb.WatchRequest); ok {
		if cr := r.GetCreateRequest(); cr != nil {
			p := ""
			if cr.StartRevision <= 0 {
				p = "watch from revision 0"
			}
			w.audit.note("watch create", p)
		}
	}
	return w.ClientStream.SendMsg(m)
}

// Invariants 2, 4, 5: every call a hold makes — version check, grant,
// txn, keepalive, reads, watches, revoke — carries WithRequireLeader and a
// deadline of at most one attempt; no read is serializable; no watch starts
// at revision 0.
func TestEveryCallRequiresLeaderAndDeadline(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		audit := &callAudit{methods: map[string]int{}}
		a, err := open(m.URL("/t8"), oldServerEnv, hold.Transport{}, audit.options()...)
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		first := startHold(t, a, election("room", "alpha"))
		first.waitEvent(t, "leader", 20*time.Second)
		second := startHold(t, a, election("room", "beta"))
		second.waitEvent(t, "waiting", 20*time.Second)
		first.waitEvent(t, "renewed", 20*time.Second)
		first.sigs <- syscall.SIGTERM
		first.waitEvent(t, "released", 10*time.Second)
		second.waitEvent(t, "leader", 20*time.Second)
		second.sigs <- syscall.SIGTERM
		require.Equal(t, hold.ExitSIGTERM, second.exit(t, 10*time.Second))

		audit.mu.Lock()
		defer audit.mu.Unlock()
		require.Empty(t, audit.problems)
		for _, method := range []string{"/etcdserverpb.Lease/LeaseGrant", "/etcdserverpb.KV/Txn", "/etcdserverpb.Lease/LeaseKeepAlive",
			"/etcdserverpb.KV/Range", "/etcdserverpb.Watch/Watch", "watch create", "/etcdserverpb.Lease/LeaseRevoke",
			"/etcdserverpb.Maintenance/Status"} {
			require.Positive(t, audit.methods[method], "%s was not audited: %v", method, audit.methods)
		}
	})
}
