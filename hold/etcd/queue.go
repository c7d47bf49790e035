package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// maxRenewInterval caps the renewal interval min(TTL/3, 5 s).
const maxRenewInterval = 5 * time.Second

// enqueue checks the server version, grants a lease and puts our key under
// it if the key is new: Txn(If CreateRevision(k) = 0, Then Put k, Get k).
// The term is the key's create revision (invariant 1).
func (r *run) enqueue() (phase, int, error) {
	if _, s := preCall(r, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.a.checkVersion(ctx, r.spec.Diag)
	}); s != nil {
		return s.next, s.code, s.err
	}
	start, err := hold.Now(r.spec.Clock)
	if err != nil {
		return phaseExit, 0, err
	}
	wall := r.spec.Clock.Wall()
	g, s := preCall(r, func(ctx context.Context) (*clientv3.LeaseGrantResponse, error) {
		return r.a.client.Grant(ctx, int64(r.spec.TTL/time.Second))
	})
	if s != nil {
		return s.next, s.code, s.err
	}
	r.c = candidacy{lease: g.ID, key: r.dir + leaseHex(int64(g.ID))}
	if err := r.confirmed(start, wall, proof{ttl: time.Duration(g.TTL) * time.Second}); err != nil {
		return phaseExit, 0, err
	}
	// The op may outlive an abandoned wait: it reads copies, never r.c.
	key, lease, value := r.c.key, r.c.lease, r.spec.Candidate // value: the candidate id; locks: empty
	t, s := preCall(r, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return r.a.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, value, clientv3.WithLease(lease)), clientv3.OpGet(key)).Commit()
	})
	if s == nil && !t.Succeeded {
		s = &stop{next: phaseEnqueue, code: -1}
		r.diag("etcd key %s already existed; queueing under a new lease", r.c.key)
	}
	if s != nil {
		if s.next != phaseExit {
			// The put may have happened: do not leave a key nobody renews.
			r.endBeforeAuthority(0)
			s.next = phaseEnqueue
		}
		return s.next, s.code, s.err
	}
	kv := t.Responses[1].GetResponseRange().Kvs[0]
	r.c.term, r.c.rev = kv.CreateRevision, t.Header.Revision
	return phaseWait, -1, nil
}

// waitTurn renews our lease and re-reads our key (invariant 8), then looks
// for the newest key older than ours. None: we lead. Otherwise we wait for
// that predecessor to change, or for our next renewal.
func (r *run) waitTurn() (phase, int, error) {
	if s := r.renewQueued(); s != nil {
		return s.next, s.code, s.err
	}
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(r.c.term-1))
	older, s := preCall(r, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return r.a.client.Get(ctx, r.dir, opts...)
	})
	if s != nil {
		return s.next, s.code, s.err
	}
	if len(older.Kvs) == 0 {
		return r.lead()
	}
	if !r.waited {
		ms := uint64(r.renewInterval() / time.Millisecond)
		reason := hold.ReasonFollower
		if r.spec.Kind == hold.KindLock {
			reason = hold.ReasonHeld
		}
		r.em.Emit(events.Waiting, hold.Fields{RetryAfter: &ms, Reason: reason})
		r.waited = true
	}
	return r.awaitPredecessor(string(older.Kvs[0].Key), older.Header.Revision)
}

// renewQueued is one renewal while waiting; nil means it proved our key. A
// failed call is never taken for a proof: its stop retries the whole phase.
// A queued key that is gone costs only our place: queue again (nothing was
// held under it).
func (r *run) renewQueued() *stop {
	start, err := hold.Now(r.spec.Clock)
	if err != nil {
		return &stop{phaseExit, 0, err}
	}
	wall := r.spec.Clock.Wall()
	p, s := preCall(r, r.prove(r.c))
	if s != nil {
		return s
	}
	if !r.owns(p) {
		r.diag("our queued etcd key %s is gone (%s); queueing again", r.c.key, p.why)
		r.endBeforeAuthority(0)
		return &stop{phaseEnqueue, -1, nil}
	}
	if err := r.confirmed(start, wall, p); err != nil {
		return &stop{phaseExit, 0, err}
	}
	return nil
}

// awaitPredecessor watches only the predecessor's key, from the revision of
// the read that found it, until it changes or our next renewal is due.
func (r *run) awaitPredecessor(key string, rev int64) (phase, int, error) {
	d := r.c.renewAt
	if r.acq != nil {
		d = d.Min(*r.acq)
	}
	o, _, err := hold.Await(r.w, d, true, nil, func(ctx context.Context) struct{} {
		for resp := range r.a.client.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(rev+1)) {
			if resp.Err() != nil || len(resp.Events) > 0 {
				break
			}
		}
		return struct{}{}
	})
	switch {
	case err != nil:
		return phaseExit, 0, err
	case o == hold.Signalled:
		return phaseExit, r.endBeforeAuthority(r.signalExit()), nil
	}
	return phaseWait, -1, nil
}

// lead starts authority: our renewal just proved our key and lease, and a
// later linearizable read found no older key (invariant 2).
func (r *run) lead() (phase, int, error) {
	if r.acqReached() {
		return phaseExit, r.endBeforeAuthority(r.acquireTimeout()), nil
	}
	if stale, err := r.staleProof(); err != nil || stale {
		return phaseWait, -1, err
	}
	obs, err := hold.ObserveAuthority(r.spec.Clock, r.c.d)
	if errors.Is(err, hold.ErrBudgetExhausted) {
		r.em.Emit(events.Uncertain, hold.Fields{Reason: hold.ReasonInitialAuthorityDeadline})
		return phaseExit, r.endBeforeAuthority(hold.ExitLost), nil
	}
	if err != nil {
		return phaseExit, 0, err
	}
	term, exp := uint64(r.c.term), r.c.expires
	name := events.Leader
	if r.spec.Kind == hold.KindLock {
		name = events.Acquired
	}
	// fencing_key: the worker gets it as OCTOSTORE_FENCING_KEY and fences
	// with Txn(If CreateRevision(key) == term).
	r.em.Emit(name, hold.Fields{Term: &term, FencingKey: r.c.key, ExpiresAt: &exp, Authority: &obs})
	code, err := r.held()
	return phaseExit, code, err
}

// staleProof: less than half of the budget from our last renewal is left
// (slow calls during a cluster election, or a starved hold). Authority then
// starts after a fresh renewal instead, so a worker never starts on a budget
// the supervisor may find too short to use: it would fail closed, and the
// election would lose a healthy candidate.
func (r *run) staleProof() (bool, error) {
	rem, err := r.c.d.Remaining(r.spec.Clock)
	if err != nil {
		return false, err
	}
	if rem >= hold.SafetyDuration(r.c.ttl)/2 {
		return false, nil
	}
	r.diag("the proof of our etcd key %s has %s of its budget left; renewing before authority", r.c.key, rem.Round(time.Millisecond))
	return true, nil
}

// proof is what one renewal read: the lease's TTL from KeepAliveOnce and our
// key as a following linearizable Get saw it (nil when gone).
type proof struct {
	ttl time.Duration
	kv  *mvccpb.KeyValue
	rev int64
	why string // why the key is not ours, for the diagnostic
}

// prove is one renewal of c: KeepAliveOnce must return TTL > 0 and a Get
// after it must still find our key (keepalive alone succeeds after `etcdctl
// del`). A lease not found (the client maps TTL ≤ 0 to it) is an answer, not
// an error: a proof without our key. The op reads its copy of c, never r.c,
// since an abandoned op may still run while the state machine moves on.
func (r *run) prove(c candidacy) func(context.Context) (proof, error) {
	return func(ctx context.Context) (proof, error) {
		ka, err := r.a.client.KeepAliveOnce(ctx, c.lease)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return proof{why: "lease " + leaseHex(int64(c.lease)) + " not found"}, nil
		}
		if err != nil {
			return proof{}, err
		}
		g, err := r.a.client.Get(ctx, c.key)
		if err != nil {
			return proof{}, err
		}
		p := proof{ttl: time.Duration(ka.TTL) * time.Second, rev: g.Header.Revision, why: "key " + c.key + " deleted"}
		if len(g.Kvs) == 1 {
			p.kv, p.why = g.Kvs[0], "key "+c.key+" now belongs to another lease or term"
		}
		return p, nil
	}
}

// owns: the key exists with our term under our lease.
func (r *run) owns(p proof) bool {
	return p.kv != nil && p.kv.CreateRevision == r.c.term && clientv3.LeaseID(p.kv.Lease) == r.c.lease
}

// confirmed records a renewal sent at start (wall: the same moment on the
// wall clock): D = start + 0.8 × min(requested, granted TTL) on both clocks
// (invariant 3), the next renewal at start + min(TTL/3, 5 s).
func (r *run) confirmed(start hold.Instant, wall time.Time, p proof) error {
	var err error
	r.c.ttl = min(r.spec.TTL, p.ttl)
	if r.c.d, err = authorityDeadline(start, r.spec.TTL, p.ttl); err != nil {
		return err
	}
	if r.c.renewAt, err = start.After(r.renewInterval()); err != nil {
		return err
	}
	r.c.expires = wall.Add(p.ttl).UTC()
	if p.rev != 0 {
		r.c.rev = p.rev
	}
	return nil
}

// authorityDeadline is D = start + 0.8 × min(requested, granted).
func authorityDeadline(start hold.Instant, requested, granted time.Duration) (hold.Deadline, error) {
	return start.After(hold.SafetyDuration(min(requested, granted)))
}

func (r *run) renewInterval() time.Duration { return min(r.c.ttl/3, maxRenewInterval) }
