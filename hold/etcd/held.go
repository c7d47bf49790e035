package etcd

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// held renews until a signal, a loss or the authority deadline. A watch on
// our own key reports its deletion within milliseconds (a resumed frozen
// etcd leader can revoke a healthy lease long before D; invariant 10).
func (r *run) held() (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := r.watchOwnKey(ctx)
	for {
		o, err := r.waitHeld(r.c.renewAt.Min(r.c.d), gone)
		if err != nil {
			return 0, err
		}
		switch {
		case o == hold.Signalled:
			return r.release(), nil
		case o == hold.Done:
			return r.lost("the watch on key " + r.c.key + " saw it deleted or replaced"), nil
		case r.c.d.Reached(r.spec.Clock):
			return r.uncertain(), nil
		}
		if code, done, err := r.renew(gone); done || err != nil {
			return code, err
		}
	}
}

// waitHeld waits for d, a signal, or gone closing (Done).
func (r *run) waitHeld(d hold.Deadline, gone <-chan struct{}) (hold.Outcome, error) {
	o, _, err := hold.Await(r.w, d, true, nil, func(ctx context.Context) struct{} {
		select {
		case <-gone:
		case <-ctx.Done():
		}
		return struct{}{}
	})
	return o, err
}

// renew proves our key until one renewal succeeds (renewed), it is gone
// (lost), D is reached (uncertain) or a signal comes (release). Each attempt
// is bounded by min(remaining budget, 1 s) and retried.
func (r *run) renew(gone <-chan struct{}) (int, bool, error) {
	for {
		start, err := hold.Now(r.spec.Clock)
		if err != nil {
			return 0, true, err
		}
		wall := r.spec.Clock.Wall()
		ans, err := call(r.w, r.c.d, true, r.prove(r.c))
		switch {
		case err != nil:
			return 0, true, err
		case ans.o == hold.Signalled:
			return r.release(), true, nil
		case ans.o == hold.DeadlineReached || r.c.d.Reached(r.spec.Clock):
			return r.uncertain(), true, nil
		case ans.err == nil && !r.owns(ans.v):
			return r.lost(ans.v.why), true, nil
		case ans.err == nil:
			return r.renewed(start, wall, ans.v)
		}
		r.diag("etcd renewal of %s failed, retrying: %v", r.c.key, ans.err)
		retry, err := hold.Now(r.spec.Clock)
		if err != nil {
			return 0, true, err
		}
		pause, err := retry.After(hold.MinRetryDelay)
		if err != nil {
			return 0, true, err
		}
		if o, err := r.waitHeld(pause.Min(r.c.d), gone); err != nil || o != hold.DeadlineReached {
			return r.afterPause(o, err)
		}
	}
}

func (r *run) afterPause(o hold.Outcome, err error) (int, bool, error) {
	switch {
	case err != nil:
		return 0, true, err
	case o == hold.Signalled:
		return r.release(), true, nil
	}
	return r.lost("the watch on key " + r.c.key + " saw it deleted or replaced"), true, nil
}

func (r *run) renewed(start hold.Instant, wall time.Time, p proof) (int, bool, error) {
	if err := r.confirmed(start, wall, p); err != nil {
		return 0, true, err
	}
	obs, err := hold.ObserveAuthority(r.spec.Clock, r.c.d)
	if errors.Is(err, hold.ErrBudgetExhausted) {
		return r.uncertain(), true, nil
	}
	if err != nil {
		return 0, true, err
	}
	term, exp := uint64(r.c.term), r.c.expires
	r.em.Emit(events.Renewed, hold.Fields{Term: &term, FencingKey: r.c.key, ExpiresAt: &exp, Authority: &obs})
	return 0, false, nil
}

// lost: our key or lease is gone (invariant 6). The lease is not revoked.
func (r *run) lost(why string) int {
	r.diag("authority lost: %s", why)
	term, exp := uint64(r.c.term), r.c.expires
	r.em.Emit(events.Lost, hold.Fields{Term: &term, ExpiresAt: &exp, Reason: reasonLeaseNotCurrent})
	return hold.ExitLost
}

// uncertain: D was reached without a confirmed renewal (invariant 6).
func (r *run) uncertain() int {
	term, exp := uint64(r.c.term), r.c.expires
	r.em.Emit(events.Uncertain, hold.Fields{Term: &term, ExpiresAt: &exp, Reason: hold.ReasonRenewalDeadlineExceeded})
	return hold.ExitLost
}

// release is the only Revoke after authority (invariant 7): on SIGTERM or
// SIGINT, which the supervisor sends once the worker is proven gone. The
// budget is min(shutdown timeout, 2 s, remaining authority).
func (r *run) release() int {
	term := uint64(r.c.term)
	rem, err := r.c.d.Remaining(r.spec.Clock)
	budget := hold.ShutdownBudget(r.spec.ShutdownTimeout, rem)
	if err == nil && budget > 0 && r.revoke(budget) {
		r.em.Emit(events.Released, hold.Fields{Term: &term, Reason: hold.ReasonSignal})
	} else {
		r.em.Emit(events.Uncertain, hold.Fields{Term: &term, Reason: hold.ReasonReleaseUnconfirmed})
	}
	return r.signalExit()
}

// watchOwnKey closes the returned channel when our key is deleted, put under
// another lease, or (after a watch ends, e.g. by compaction or a lost etcd
// leader) a re-read no longer finds it ours. It never watches from
// revision 0: it resumes after the last revision it saw.
func (r *run) watchOwnKey(ctx context.Context) <-chan struct{} {
	gone := make(chan struct{})
	c := r.c
	pause := &hold.Waiter{Clock: r.spec.Clock, Ctx: ctx}
	go func() {
		rev := c.rev
		for ctx.Err() == nil {
			if r.followKey(ctx, c, &rev) {
				close(gone)
				return
			}
			now, err := hold.Now(r.spec.Clock)
			if err != nil {
				return
			}
			if d, err := now.After(hold.MinRetryDelay); err == nil {
				_, _ = pause.Sleep(d, true)
			}
		}
	}()
	return gone
}

// followKey watches c.key from *rev+1 until the watch ends; true means the
// key is no longer ours.
func (r *run) followKey(ctx context.Context, c candidacy, rev *int64) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range r.a.client.Watch(clientv3.WithRequireLeader(wctx), c.key, clientv3.WithRev(*rev+1)) {
		if resp.Err() != nil {
			break
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete || clientv3.LeaseID(ev.Kv.Lease) != c.lease {
				return true
			}
		}
		*rev = resp.Header.Revision
	}
	if ctx.Err() != nil {
		return false
	}
	gctx, gcancel := callContext(ctx, attemptCap)
	defer gcancel()
	g, err := r.a.client.Get(gctx, c.key)
	if err != nil {
		return false
	}
	*rev = g.Header.Revision
	return len(g.Kvs) == 0 || g.Kvs[0].CreateRevision != c.term || clientv3.LeaseID(g.Kvs[0].Lease) != c.lease
}
