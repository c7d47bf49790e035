package etcd

import (
	"context"
	"time"
)

// ClusterInfo is what `doctor --server etcd://…` reports.
type ClusterInfo struct {
	Server  string
	Members []MemberInfo
	// LeaderID is the etcd leader's member id as the reachable members
	// report it (0: none reported one).
	LeaderID uint64
}

// MemberInfo is one configured endpoint.
type MemberInfo struct {
	Endpoint  string
	Reachable bool
	Version   string
	MemberID  uint64
	IsLeader  bool
	// RoundTrip is the measured time of one Status call.
	RoundTrip time.Duration
	// Err says why an endpoint is unreachable (no secrets: etcd's text).
	Err error
}

// Probe asks every endpoint for its status (linearizable calls with
// WithRequireLeader and a one-second bound each). The error is nil when at
// least one member answered; the version floor is not enforced here, so
// doctor can show an old server — VersionOK says whether it would be used.
func (a *Authority) Probe(ctx context.Context) (ClusterInfo, error) {
	info := ClusterInfo{Server: a.Server()}
	a.mu.Lock()
	err := a.connect()
	a.mu.Unlock()
	if err != nil {
		return info, err
	}
	var lastErr error
	for _, ep := range a.t.endpoints {
		m := MemberInfo{Endpoint: ep}
		cctx, cancel := callContext(ctx, attemptCap)
		start := time.Now()
		st, err := a.client.Status(cctx, ep)
		m.RoundTrip = time.Since(start)
		cancel()
		if err != nil {
			m.Err, lastErr = err, err
		} else {
			m.Reachable, m.Version, m.MemberID = true, st.Version, st.Header.MemberId
			m.IsLeader = st.Leader == st.Header.MemberId
			info.LeaderID = st.Leader
		}
		info.Members = append(info.Members, m)
	}
	for _, m := range info.Members {
		if m.Reachable {
			return info, nil
		}
	}
	return info, lastErr
}

// VersionOK reports whether v is at or above the supported floor
// (3.4.31, 3.5.13, 3.6.0).
func VersionOK(v string) bool {
	ok, err := versionOK(v)
	return err == nil && ok
}
