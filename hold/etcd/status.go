package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/hold"
)

// readTimeout bounds the read-only commands' calls (there is no authority
// budget to respect).
const readTimeout = 5 * time.Second

// CreateElection mints a random id (hold.NewElectionID), as OctoStore does.
// Nothing is written: an etcd room is just a key prefix. The cluster is still asked for its version so a
// wrong URL fails here rather than at the first hold.
func (a *Authority) CreateElection(ctx context.Context) (hold.ElectionCreated, error) {
	if err := a.checkVersion(ctx, a.Diag); err != nil {
		return hold.ElectionCreated{}, err
	}
	id, err := hold.NewElectionID()
	if err != nil {
		return hold.ElectionCreated{}, err
	}
	path := "/elections/" + hold.EncodeSegment(id)
	return hold.ElectionCreated{ElectionID: id, CampaignPath: path + "/campaign", StatusPath: path, WatchPath: path + "/watch"}, nil
}

// Status reads the holder of kind/name: the oldest key under the name
// (Get WithFirstCreate, linearizable) and its lease's remaining TTL.
func (a *Authority) Status(ctx context.Context, kind hold.Kind, name string) (hold.Report, error) {
	if err := a.checkVersion(ctx, a.Diag); err != nil {
		return nil, err
	}
	st, _, err := a.readStatus(ctx, kind, name)
	return st, err
}

// readStatus also returns the header revision of the read, where a watch
// continues.
func (a *Authority) readStatus(ctx context.Context, kind hold.Kind, name string) (status, int64, error) {
	cctx, cancel := callContext(ctx, readTimeout)
	defer cancel()
	g, err := a.client.Get(cctx, a.t.namePrefix(kind, name), clientv3.WithFirstCreate()...)
	if err != nil {
		return status{}, 0, fmt.Errorf("etcd %s: read %s %s: %w", a.Server(), kind, name, err)
	}
	st := status{kind: kind, server: a.Server(),
		election: hold.ElectionStatus{ElectionID: name, Status: "vacant"},
		lock:     hold.LockStatus{Name: name, Status: "free"}}
	if len(g.Kvs) == 0 {
		return st, g.Header.Revision, nil
	}
	kv := g.Kvs[0]
	ttl, err := a.client.TimeToLive(cctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return status{}, 0, fmt.Errorf("etcd %s: read lease of %s: %w", a.Server(), kv.Key, err)
	}
	expires := time.Now().Add(time.Duration(max(ttl.TTL, 0)) * time.Second).UTC()
	holder := leaseHex(kv.Lease)
	st.election.Status = hold.ElectionStatusLeader
	st.election.Leader = &hold.StatusLeader{CandidateID: string(kv.Value), Term: uint64(kv.CreateRevision), ExpiresAt: expires}
	st.election.RetryAfterMS = uint64(max(ttl.TTL, 0)) * 1000
	st.lock = hold.LockStatus{Name: name, Status: hold.LockStatusHeld, HolderID: &holder, FencingToken: uint64(kv.CreateRevision), ExpiresAt: &expires}
	return st, g.Header.Revision, nil
}

// status is one reading, shaped like the HTTP authority's status bodies.
type status struct {
	kind     hold.Kind
	server   string
	election hold.ElectionStatus
	lock     hold.LockStatus
}

func (s status) JSON() []byte {
	if s.kind == hold.KindLock {
		return s.lock.JSON("")
	}
	return s.election.JSON()
}

// Human is the line `… status` prints, as for the HTTP authority.
func (s status) Human() string {
	server := hold.TerminalSafe(s.server)
	if s.kind == hold.KindLock {
		return fmt.Sprintf("%s · %s · term %d · authority %s", hold.TerminalSafe(s.lock.Name), s.lock.Status, s.lock.FencingToken, server)
	}
	if l := s.election.Leader; l != nil {
		return fmt.Sprintf("%s · leader %s · term %d · expires %s · authority %s", hold.TerminalSafe(s.election.ElectionID),
			hold.TerminalSafe(l.CandidateID), l.Term, hold.RFC3339Offset(l.ExpiresAt), server)
	}
	return fmt.Sprintf("%s · vacant · authority %s", hold.TerminalSafe(s.election.ElectionID), server)
}

// snapshot is the watch's "snapshot" object (alphabetical keys).
func (s status) snapshot() []byte {
	if s.kind == hold.KindLock {
		return s.lock.JSON("")
	}
	return s.election.Snapshot()
}

// word is the status word of a watch's human line.
func (s status) word() string {
	if s.kind == hold.KindLock {
		return s.lock.Status
	}
	return s.election.Status
}
