package hold

import (
	"io"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// emitter prints the JSONL hold events of one run
// (docs/protocol.md "Event envelope"): it owns the sequence counter (1, 2, 3,
// …) and fills the envelope fields shared by every line. Encoding is
// events.HoldEvent.Encode, the project's one definition of the schema.
type emitter struct {
	out       io.Writer
	clock     Clock
	kind      events.Kind
	name      string
	server    string
	candidate *string // elections only
	seq       uint64
}

// eventFields are the per-event optional fields.
type eventFields struct {
	term       *uint64
	expiresAt  *time.Time
	retryAfter *uint64
	reason     string
	authority  *AuthorityObservation
}

// emit writes one line. For authority events the observation's wall sample is
// observed_at; otherwise the wall clock is sampled now. A failing writer is
// ignored, as there is nowhere left to report it.
func (e *emitter) emit(name string, f eventFields) {
	e.seq++
	ev := events.HoldEvent{
		Event: events.Event{
			Sequence:    e.seq,
			Event:       name,
			Kind:        e.kind,
			Name:        e.name,
			Server:      e.server,
			CandidateID: e.candidate,
			Term:        f.term,
			ReasonCode:  f.reason,
		},
		ExpiresAt:    f.expiresAt,
		RetryAfterMs: f.retryAfter,
	}
	if a := f.authority; a != nil {
		auth := events.NewAuthority(uint64(a.RemainingMS), uint64(a.ObservedAt.UnixMilli()), uint64(a.ContinuousMS))
		ev.Authority = &auth
		ev.ObservedAt = a.ObservedAt
	} else {
		ev.ObservedAt = e.clock.Wall()
	}
	_, _ = e.out.Write(ev.Encode())
}
