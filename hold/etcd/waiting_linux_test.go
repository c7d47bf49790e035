//go:build linux

package etcd

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/octostore-supervisor/supervisor/hold"
)

// keepAliveFault fails the first lease keepalive a waiting candidate sends
// once it is alone in the election (the holder has released), and notes
// when each keepalive stream was opened and whether it was failed.
type keepAliveFault struct {
	peer   *clientv3.Client // the test's own, to count the election's keys
	prefix string

	mu     sync.Mutex
	failed time.Time // zero until the one failure
	opened []time.Time
}

func (k *keepAliveFault) options() []grpc.DialOption {
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if method == "/etcdserverpb.Lease/LeaseKeepAlive" && k.fail(ctx) {
			return nil, grpcstatus.Error(codes.DeadlineExceeded, "injected: keepalive timed out") // not retried inside KeepAliveOnce
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	return []grpc.DialOption{grpc.WithChainStreamInterceptor(stream)}
}

// fail decides for one keepalive stream and records it.
func (k *keepAliveFault) fail(ctx context.Context) bool {
	g, err := k.peer.Get(ctx, k.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil && g.Count == 1 && k.failed.IsZero() {
		k.failed = time.Now()
		return true
	}
	k.opened = append(k.opened, time.Now())
	return false
}

// A renewal that fails while waiting is no proof of the queued key: the
// candidate renews again before it leads. (It used to go on as if renewed,
// to the older-key read and then lead on what was left of the previous
// proof's budget; a supervisor could find that too short and fail closed.)
// The failure is injected into the renewal right after the holder released,
// so without the second renewal the leader line follows the failure at once.
func TestFailedRenewalWhileWaitingIsNoProof(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		first := startHold(t, m.authority(t, "/t19"), election("room", "alpha"))
		first.waitEvent(t, "leader", 20*time.Second)
		fault := &keepAliveFault{peer: m.Client(t), prefix: "/t19/election/room/"}
		b, err := open(m.URL("/t19"), oldServerEnv, hold.Transport{}, fault.options()...)
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		second := startHold(t, b, election("room", "beta"))
		second.waitEvent(t, "waiting", 20*time.Second)

		first.sigs <- syscall.SIGTERM
		first.waitEvent(t, "released", 10*time.Second)
		lead := second.waitEvent(t, "leader", 20*time.Second)
		at := eventTime(t, lead, "observed_at")

		fault.mu.Lock()
		defer fault.mu.Unlock()
		require.False(t, fault.failed.IsZero(), "no keepalive was sent after the holder released")
		renewedSince := false
		for _, o := range fault.opened {
			renewedSince = renewedSince || (o.After(fault.failed) && o.Before(at))
		}
		require.True(t, renewedSince, "leader at %v after the renewal that failed at %v, with no renewal between", at, fault.failed)
		second.sigs <- syscall.SIGTERM
		second.waitEvent(t, "released", 10*time.Second)
	})
}

// A candidate starved between its renewal and its older-key read (here: the
// clock jumps by 0.6 × the budget as the read's reply arrives, once the holder
// has released) renews again before it leads, so the leader line carries more
// than half a budget rather than what the starvation left. The jump comes
// after the reply, not before the request: a call's own deadline is on the
// same clock, so a jump while the read is in flight ends that call instead
// (a retry, also safe, but not the path under test), and on a loaded machine
// it did.
func TestStaleProofIsRenewedBeforeAuthority(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		first := startHold(t, m.authority(t, "/t20"), election("room", "alpha"))
		first.waitEvent(t, "leader", 20*time.Second)
		peer := m.Client(t)
		clock := newSkewClock(t, 1)
		off := clock.jump
		spec := election("room", "beta")
		spec.TTL = 10 * time.Second
		spec.Clock = clock
		safety := hold.SafetyDuration(spec.TTL)
		olderRead := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			jump := false
			if r, ok := req.(*pb.RangeRequest); ok && r.MaxCreateRevision > 0 && off.Load() == 0 {
				g, err := peer.Get(ctx, "/t20/election/room/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				jump = err == nil && g.Count == 1
			}
			err := invoker(ctx, method, req, reply, cc, opts...)
			if jump && err == nil {
				off.Store(int64(safety * 6 / 10))
			}
			return err
		}
		b, err := open(m.URL("/t20"), oldServerEnv, hold.Transport{}, grpc.WithChainUnaryInterceptor(olderRead))
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		second := startHold(t, b, spec)
		second.waitEvent(t, "waiting", 20*time.Second)

		first.sigs <- syscall.SIGTERM
		first.waitEvent(t, "released", 10*time.Second)
		lead := second.waitEvent(t, "leader", 20*time.Second)
		require.NotZero(t, off.Load(), "the older-key read after the release was not seen")
		left := time.Duration(lead["authority_remaining_ms"].(float64)) * time.Millisecond
		require.Greater(t, left, safety/2, "the leader line carries %v of a %v budget", left, safety)
		require.Contains(t, second.diag.String(), "renewing before authority")
		second.sigs <- syscall.SIGTERM
		second.waitEvent(t, "released", 10*time.Second)
	})
}
