//go:build linux

package etcd

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Invariant 1 and 7: the term is the holder key's create revision, constant
// while held, strictly increasing across holders; SIGTERM revokes the lease
// (released) and only then does the next candidate lead.
func TestTermIsCreateRevisionAndSignalReleases(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t1")
		first := startHold(t, a, election("room", "alpha"))
		lead := first.waitEvent(t, "leader", 20*time.Second)
		ks := keys(t, c, "/t1/election/room/")
		require.Len(t, ks, 1)
		for k, rev := range ks {
			require.Equal(t, rev, term(lead), "term = create revision of the holder key")
			require.Equal(t, k, lead["fencing_key"], "the leader line names the holder key")
		}
		key := lead["fencing_key"].(string)
		fenced := func() bool { // the worker's write, as README shows it
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", term(lead))).
				Then(clientv3.OpPut("/t1/data", "x")).Commit()
			require.NoError(t, err)
			return r.Succeeded
		}
		require.True(t, fenced(), "the holder's fenced write is accepted")
		second := startHold(t, a, election("room", "beta"))
		second.waitEvent(t, "waiting", 20*time.Second)
		first.waitEvent(t, "renewed", 20*time.Second)
		for _, e := range first.events(t) {
			if e["term"] != nil {
				require.Equal(t, term(lead), term(e), "term constant while held")
			}
			if e["event"] == "renewed" {
				require.Equal(t, key, e["fencing_key"])
			}
		}
		first.sigs <- syscall.SIGTERM
		require.Equal(t, hold.ExitSIGTERM, first.exit(t, 10*time.Second))
		rel := first.waitEvent(t, "released", time.Second)
		require.Equal(t, "signal", rel["reason_code"])
		require.False(t, fenced(), "after release the old term's fenced write is refused")
		next := second.waitEvent(t, "leader", 20*time.Second)
		require.Greater(t, term(next), term(lead), "terms strictly increase across holders")
		require.Equal(t, "beta", next["candidate_id"])
	})
}

// Invariant 6 and 7: deleting our key (etcdctl del) is reported as lost
// within 100 ms by the own-key watch; the lease is left to lapse (not
// revoked) and the hold never puts a key again.
func TestOwnKeyDeletedIsLostAtOnceAndNeverReacquired(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t2")
		h := startHold(t, a, election("room", "alpha"))
		h.waitEvent(t, "leader", 20*time.Second)
		ks := keys(t, c, "/t2/election/room/")
		require.Len(t, ks, 1)
		var key string
		for k := range ks {
			key = k
		}
		lease := leaseOf(t, c, key)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.Delete(ctx, key)
		require.NoError(t, err)
		deleted := time.Now()
		lost := h.waitEvent(t, "lost", 5*time.Second)
		require.Equal(t, reasonLeaseNotCurrent, lost["reason_code"])
		at, err := time.Parse(time.RFC3339Nano, lost["observed_at"].(string))
		require.NoError(t, err)
		require.Less(t, at.Sub(deleted), 100*time.Millisecond, "lost must follow the delete within 100 ms")
		require.Equal(t, hold.ExitLost, h.exit(t, 5*time.Second))
		ttl, err := c.TimeToLive(ctx, lease)
		require.NoError(t, err)
		require.Positive(t, ttl.TTL, "lost must not revoke: the lease lapses")
		require.Empty(t, keys(t, c, "/t2/election/room/"), "a hold never reacquires")
	})
}

// Invariant 6: `etcdctl lease revoke` of the holder's lease is lost at once.
func TestLeaseRevokedIsLost(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t3")
		h := startHold(t, a, lock("jobs"))
		h.waitEvent(t, "acquired", 20*time.Second)
		var key string
		for k := range keys(t, c, "/t3/lock/jobs/") {
			key = k
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.Revoke(ctx, leaseOf(t, c, key))
		require.NoError(t, err)
		lost := h.waitEvent(t, "lost", 5*time.Second)
		require.Equal(t, reasonLeaseNotCurrent, lost["reason_code"])
		require.Equal(t, hold.ExitLost, h.exit(t, 5*time.Second))
	})
}

// Invariant 6: a cluster that stops answering makes the holder uncertain
// once D is reached, never lost and never leader again.
func TestFrozenClusterIsUncertain(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		a := m.authority(t, "/t4")
		spec := election("room", "alpha")
		spec.TTL = 3 * time.Second
		h := startHold(t, a, spec)
		h.waitEvent(t, "leader", 20*time.Second)
		require.Contains(t, h.diag.String(), "below 10s", "a short TTL is warned about")
		for i := range 3 {
			m.Member(i).Stop() // the harness continues them at cleanup
		}
		u := h.waitEvent(t, "uncertain", 10*time.Second)
		require.Equal(t, hold.ReasonRenewalDeadlineExceeded, u["reason_code"])
		require.Equal(t, hold.ExitLost, h.exit(t, 5*time.Second))
	})
}

// Invariant 8: a waiting candidate keeps its lease alive for longer than its
// TTL and keeps its key (and so its place and term) until it leads.
func TestWaitingCandidateKeepsItsLease(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t5")
		first := startHold(t, a, election("room", "alpha"))
		first.waitEvent(t, "leader", 20*time.Second)
		spec := election("room", "beta")
		spec.TTL = 3 * time.Second
		second := startHold(t, a, spec)
		second.waitEvent(t, "waiting", 20*time.Second)
		before := keys(t, c, "/t5/election/room/")
		require.Len(t, before, 2)
		// Two renewals of the first holder (TTL 10 s: ≥ 6.6 s) outlast the
		// waiting candidate's 3 s lease unless it is kept alive.
		proctest.WaitFor(t, 30*time.Second, "two renewals of the leader", func() bool { return first.count(t, "renewed") >= 2 })
		require.Equal(t, before, keys(t, c, "/t5/election/room/"), "the waiting key survives with its create revision")
		first.sigs <- syscall.SIGTERM
		lead := second.waitEvent(t, "leader", 20*time.Second)
		var want int64
		for _, rev := range before {
			want = max(want, rev)
		}
		require.Equal(t, want, term(lead))
	})
}

// Invariant 9: lock "a" and lock "a/b" are different names, held at once.
func TestLockNamesNeverNest(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t6")
		// The nested name first: unencoded, its key would sit under "a"'s prefix
		// with an older create revision, and "a" would wait behind it.
		inner := startHold(t, a, lock("a/b"))
		inner.waitEvent(t, "acquired", 20*time.Second)
		outer := startHold(t, a, lock("a"))
		outer.waitEvent(t, "acquired", 20*time.Second)
		require.Len(t, keys(t, c, "/t6/lock/a/"), 1)
		require.Len(t, keys(t, c, "/t6/lock/a%2Fb/"), 1)
	})
}

// A candidate that gives up (acquire timeout, signal) removes its queued
// key: successors must not wait behind it. Nothing was held under it.
func TestGivingUpLeavesNoQueuedKey(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		c := m.Client(t)
		a := m.authority(t, "/t7")
		first := startHold(t, a, lock("jobs"))
		first.waitEvent(t, "acquired", 20*time.Second)
		spec := lock("jobs")
		timeout := 2 * time.Second
		spec.AcquireTimeout = &timeout
		timed := startHold(t, a, spec)
		interrupted := startHold(t, a, lock("jobs"))
		interrupted.waitEvent(t, "waiting", 20*time.Second)
		interrupted.sigs <- syscall.SIGINT
		require.Equal(t, hold.ExitSIGINT, interrupted.exit(t, 10*time.Second))
		require.Equal(t, hold.ExitAcquireTimeout, timed.exit(t, 20*time.Second))
		e := timed.waitEvent(t, "error", time.Second)
		require.Equal(t, hold.ReasonAcquireTimeout, e["reason_code"])
		require.Len(t, keys(t, c, "/t7/lock/jobs/"), 1, "only the holder's key is left")
	})
}

func leaseOf(t *testing.T, c *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := c.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, g.Kvs, 1)
	return clientv3.LeaseID(g.Kvs[0].Lease)
}

// Invariant 5's short attempts: a member whose connections are blackholed
// (or reset) costs a retry, not authority; all members cut off → uncertain
// once D is reached, and the hold ends there.
func TestCutOffMembersAreRetriedAroundThenUncertain(t *testing.T) {
	for _, s := range etcdtest.Servers(t) {
		t.Run(s.Name, func(t *testing.T) {
			m := &cluster{etcdtest.Start(t, etcdtest.Options{Server: s, Proxy: true})}
			a := m.authority(t, "/t18")
			h := startHold(t, a, lock("jobs"))
			h.waitEvent(t, "acquired", 20*time.Second)
			renewals := func(n int) {
				want := h.count(t, "renewed") + n
				proctest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d renewals", want), func() bool { return h.count(t, "renewed") >= want })
			}
			m.Proxy(0).Blackhole()
			renewals(2)
			for i := range 3 {
				m.Proxy(i).Reset()
			}
			renewals(1)
			require.Zero(t, h.count(t, "uncertain"))
			for i := range 3 {
				m.Proxy(i).Blackhole()
			}
			u := h.waitEvent(t, "uncertain", 20*time.Second)
			require.Equal(t, hold.ReasonRenewalDeadlineExceeded, u["reason_code"])
			require.Equal(t, hold.ExitLost, h.exit(t, 5*time.Second))
			for i := range 3 {
				m.Proxy(i).Pass()
			}
		})
	}
}
