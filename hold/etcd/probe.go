package etcd

import (
	"context"
	"fmt"
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
	for _, ep := range a.t.clientEndpoints() {
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

// Identity is the cluster's identity on this host (octostore-supervisor's
// interlock and survivor record): the cluster ID every member reports in
// every response header, whichever endpoints and spellings reach it, and the
// key prefix. One call per endpoint, each bounded like every other; the
// error is the last endpoint's when none answered.
func (a *Authority) Identity(ctx context.Context) (string, error) {
	a.mu.Lock()
	err := a.connect()
	a.mu.Unlock()
	if err != nil {
		return "", err
	}
	for _, ep := range a.t.clientEndpoints() {
		cctx, cancel := callContext(ctx, attemptCap)
		st, serr := a.client.Status(cctx, ep)
		cancel()
		if serr == nil {
			return fmt.Sprintf("etcd-cluster:%016x%s", st.Header.ClusterId, a.t.prefix), nil
		}
		err = serr
	}
	return "", &redactedError{msg: "etcd " + a.Server() + ": no member answered: " + redact(err.Error(), a.cfg.Password) + a.t.refusedPeers(), err: err}
}
