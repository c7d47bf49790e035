package hold

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// HTTPAuthority is the OctoStore HTTP service as an Authority: holds,
// status, watch and room creation through one Client.
type HTTPAuthority struct {
	client *Client
	token  string
	// DefaultServer says the client's server is the hosted default, named by
	// neither --server nor OCTOSTORE_URL: an election hold that cannot reach
	// it then says so once (electionHold.DefaultServer).
	DefaultServer bool
}

var _ Authority = (*HTTPAuthority)(nil)

// NewHTTPAuthority serves through c. token is the bearer token of the lock
// routes (sent on lock requests only, never printed); elections carry none.
func NewHTTPAuthority(c *Client, token string) *HTTPAuthority {
	return &HTTPAuthority{client: c, token: token}
}

// Server implements Authority.
func (a *HTTPAuthority) Server() string { return a.client.server.URL }

// Hold implements Authority: an electionHold or a lockHold run with spec.
func (a *HTTPAuthority) Hold(ctx context.Context, spec HoldSpec, signals <-chan os.Signal) int {
	switch spec.Kind {
	case KindElection:
		h := &electionHold{Client: a.client, Clock: spec.Clock, Jitter: spec.Jitter, ElectionID: spec.Name,
			Candidate: spec.Candidate, TTL: spec.TTL, AcquireTimeout: spec.AcquireTimeout,
			ShutdownTimeout: spec.ShutdownTimeout, Out: spec.Out, Diag: spec.Diag, DefaultServer: a.DefaultServer}
		return h.Run(ctx, signals)
	case KindLock:
		h := &lockHold{Client: a.client, Clock: spec.Clock, Jitter: spec.Jitter, Name: spec.Name, TTL: spec.TTL,
			Token: a.token, AcquireTimeout: spec.AcquireTimeout, ShutdownTimeout: spec.ShutdownTimeout,
			Out: spec.Out, Diag: spec.Diag}
		return h.Run(ctx, signals)
	}
	// A caller's bug, not a user's: the kinds are the CLI's own.
	if spec.Diag != nil {
		fmt.Fprintf(spec.Diag, "octostore: unknown hold kind %d\n", spec.Kind)
	}
	return ExitSoftware
}

// CreateElection implements Authority (POST /elections).
func (a *HTTPAuthority) CreateElection(ctx context.Context) (ElectionCreated, error) {
	room, err := createElection(ctx, a.client)
	return room, a.safe(err)
}

// Status implements Authority: GET the election's or lock's status. Errors
// read as the failure's diagnostic with the token redacted (safe).
func (a *HTTPAuthority) Status(ctx context.Context, kind Kind, name string) (Report, error) {
	if kind == KindLock {
		st, err := getLockStatus(ctx, a.client, name, a.token)
		if err != nil {
			return nil, a.safe(err)
		}
		return lockReport{st: st, token: a.token, server: a.Server()}, nil
	}
	st, err := getElectionStatus(ctx, a.client, name)
	if err != nil {
		return nil, a.safe(err)
	}
	return electionReport{st: st, server: a.Server()}, nil
}

// Watch implements Authority (`… watch`, docs/protocol.md "Watch").
func (a *HTTPAuthority) Watch(ctx context.Context, spec WatchSpec, signals <-chan os.Signal) int {
	w := &watch{Client: a.client, Kind: spec.Kind, Name: spec.Name, JSON: spec.JSON, Out: spec.Out, Diag: spec.Diag}
	if spec.Kind == KindLock {
		w.Token = a.token
	}
	return w.Run(ctx, signals)
}

// safe is err as the caller may print it: a failure's diagnostic, or the
// error's text, with the token redacted (a server may reflect it).
func (a *HTTPAuthority) safe(err error) error {
	if err == nil {
		return nil
	}
	var f *Failure
	if errors.As(err, &f) {
		return errors.New(f.DiagnosticRedacting(a.token))
	}
	return errors.New(Redact(err.Error(), a.token))
}

// Close implements Authority: idle connections are closed.
func (a *HTTPAuthority) Close() error {
	a.client.CloseIdleConnections()
	return nil
}

// electionReport is `election status` (docs/protocol.md "Read-only
// commands").
type electionReport struct {
	st     ElectionStatus
	server string
}

func (r electionReport) JSON() []byte { return r.st.JSON() }

// Human keys on the leader object, not the status string, as upstream does.
func (r electionReport) Human() string {
	server := TerminalSafe(r.server)
	if l := r.st.Leader; l != nil {
		return fmt.Sprintf("%s · leader %s · term %d · expires %s · authority %s", TerminalSafe(r.st.ElectionID),
			TerminalSafe(l.CandidateID), l.Term, RFC3339Offset(l.ExpiresAt), server)
	}
	return fmt.Sprintf("%s · vacant · authority %s", TerminalSafe(r.st.ElectionID), server)
}

// lockReport is `lock status`; the token is redacted from both renderings.
type lockReport struct {
	st            LockStatus
	token, server string
}

func (r lockReport) JSON() []byte { return r.st.JSON(r.token) }

func (r lockReport) Human() string {
	return fmt.Sprintf("%s · %s · term %d · authority %s", TerminalSafe(Redact(r.st.Name, r.token)),
		TerminalSafe(Redact(r.st.Status, r.token)), r.st.FencingToken, TerminalSafe(r.server))
}
