package holdcli

import (
	"context"
	"fmt"
	"os"

	"github.com/octostore-supervisor/supervisor/hold"
)

// httpAuthority is the OctoStore HTTP service as a hold.Authority, wrapping
// today's hold.ElectionHold, LockHold, CreateElection, GetElectionStatus,
// GetLockStatus and Watch with the human lines exactly as before.
//
// MERGE: replace with hold.HTTPAuthority (hold/http_authority.go) when that
// lands; target.open is the only place that builds one. HTTPAuthority must
// then redact the token from its errors itself (apiFailure does it here).
type httpAuthority struct {
	client *hold.Client
	// token is the bearer token (lock commands only).
	token string
	// defaulted: the hosted default server was chosen, not named.
	defaulted bool
}

func (a *httpAuthority) Server() string { return a.client.Server().URL }

func (a *httpAuthority) Close() error {
	a.client.CloseIdleConnections()
	return nil
}

func (a *httpAuthority) Hold(ctx context.Context, spec hold.HoldSpec, signals <-chan os.Signal) int {
	if spec.Kind == hold.KindLock {
		h := &hold.LockHold{Client: a.client, Clock: spec.Clock, Jitter: spec.Jitter, Name: spec.Name, TTL: spec.TTL,
			Token: a.token, AcquireTimeout: spec.AcquireTimeout, ShutdownTimeout: spec.ShutdownTimeout, Out: spec.Out, Diag: spec.Diag}
		return h.Run(ctx, signals)
	}
	h := &hold.ElectionHold{Client: a.client, Clock: spec.Clock, Jitter: spec.Jitter, ElectionID: spec.Name,
		Candidate: spec.Candidate, TTL: spec.TTL, AcquireTimeout: spec.AcquireTimeout, ShutdownTimeout: spec.ShutdownTimeout,
		Out: spec.Out, Diag: spec.Diag, DefaultServer: a.defaulted}
	return h.Run(ctx, signals)
}

func (a *httpAuthority) CreateElection(ctx context.Context) (hold.ElectionCreated, error) {
	room, err := hold.CreateElection(ctx, a.client)
	if err != nil {
		return room, apiFailure(err, a.token)
	}
	return room, nil
}

func (a *httpAuthority) Status(ctx context.Context, kind hold.Kind, name string) (hold.Report, error) {
	server := hold.TerminalSafe(a.Server())
	if kind == hold.KindLock {
		st, err := hold.GetLockStatus(ctx, a.client, name, a.token)
		if err != nil {
			return nil, apiFailure(err, a.token)
		}
		return report{json: st.JSON(a.token), human: fmt.Sprintf("%s · %s · term %d · authority %s", hold.TerminalSafe(hold.Redact(st.Name, a.token)),
			hold.TerminalSafe(hold.Redact(st.Status, a.token)), st.FencingToken, server)}, nil
	}
	st, err := hold.GetElectionStatus(ctx, a.client, name)
	if err != nil {
		return nil, apiFailure(err, a.token)
	}
	r := report{json: st.JSON()}
	if st.Leader != nil {
		r.human = fmt.Sprintf("%s · leader %s · term %d · expires %s · authority %s", hold.TerminalSafe(st.ElectionID),
			hold.TerminalSafe(st.Leader.CandidateID), st.Leader.Term, hold.RFC3339Offset(st.Leader.ExpiresAt), server)
	} else {
		// Upstream keys the human line on the leader object, not on the
		// status string.
		r.human = fmt.Sprintf("%s · vacant · authority %s", hold.TerminalSafe(st.ElectionID), server)
	}
	return r, nil
}

func (a *httpAuthority) Watch(ctx context.Context, spec hold.WatchSpec, signals <-chan os.Signal) int {
	w := &hold.Watch{Client: a.client, Kind: spec.Kind, Name: spec.Name, Token: a.token, JSON: spec.JSON, Out: spec.Out, Diag: spec.Diag}
	return w.Run(ctx, signals)
}

// report is a status reading already rendered both ways.
type report struct {
	json  []byte
	human string
}

func (r report) JSON() []byte  { return r.json }
func (r report) Human() string { return r.human }

var _ hold.Authority = (*httpAuthority)(nil)
