package hold

import (
	"io"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// Emitter prints the JSONL hold events of one run
// (docs/protocol.md "Event envelope"): it owns the sequence counter (1, 2, 3,
// …) and fills the envelope fields shared by every line. Encoding is
// events.HoldEvent.Append, the project's one definition of the schema. Every
// authority's hold prints through one, so the bytes cannot differ between
// authorities.
type Emitter struct {
	out       io.Writer
	clock     Clock
	kind      events.Kind
	name      string
	server    string
	candidate *string // elections only
	seq       uint64
	line      []byte // Emit's buffer, kept so a renewal's line allocates nothing
}

// NewEmitter prints the events of spec's hold, naming server (the normalized
// authority URL, without credentials) in every line.
func NewEmitter(spec HoldSpec, server string) *Emitter {
	e := &Emitter{out: spec.Out, clock: spec.Clock, kind: events.Election, name: spec.Name, server: server}
	if spec.Kind == KindLock {
		e.kind = events.Lock
	} else {
		candidate := spec.Candidate
		e.candidate = &candidate
	}
	return e
}

// Fields are the per-event optional fields.
type Fields struct {
	// Term is the fencing term (lock) or leadership term (election).
	Term *uint64
	// FencingKey is set on leader/acquired/renewed by authorities that have
	// one (etcd); the HTTP and local holds never set it, so their bytes are
	// upstream's.
	FencingKey string
	// ExpiresAt is the authority's expiry as the authority reported it.
	ExpiresAt *time.Time
	// RetryAfter is the server's retry guidance in milliseconds (waiting).
	RetryAfter *uint64
	// Reason is the reason_code: why a waiting, lost or uncertain happened.
	Reason string
	// Authority is set on leader, acquired and renewed: its wall sample is
	// also the line's observed_at.
	Authority *AuthorityObservation
}

// Emit writes one line. For authority events the observation's wall sample is
// observed_at; otherwise the wall clock is sampled now. A failing writer is
// ignored, as there is nowhere left to report it.
func (e *Emitter) Emit(name string, f Fields) {
	e.seq++
	ev := events.HoldEvent{
		Event: events.Event{
			Sequence:    e.seq,
			Event:       name,
			Kind:        e.kind,
			Name:        e.name,
			Server:      e.server,
			CandidateID: e.candidate,
			Term:        f.Term,
			ReasonCode:  f.Reason,
			FencingKey:  f.FencingKey,
		},
		ExpiresAt:    f.ExpiresAt,
		RetryAfterMs: f.RetryAfter,
	}
	if a := f.Authority; a != nil {
		auth := events.NewAuthority(uint64(a.RemainingMS), uint64(a.ObservedAt.UnixMilli()), uint64(a.ContinuousMS))
		ev.Authority = &auth
		ev.ObservedAt = a.ObservedAt
	} else {
		ev.ObservedAt = e.clock.Wall()
	}
	e.line = ev.Append(e.line[:0])
	_, _ = e.out.Write(e.line)
}
