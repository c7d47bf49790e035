package events

import (
	"fmt"
	"strconv"
	"time"
)

// HoldEvent is one line as a hold prints it
// (docs/protocol.md "Event envelope"): the schema the supervisor validates
// (Event) plus the fields only a hold writes. The hold client and the
// supervisor share this one definition of the schema.
type HoldEvent struct {
	Event
	ExpiresAt    *time.Time // leader/acquired/renewed, lost, held uncertain
	RetryAfterMs *uint64    // waiting
	ObservedAt   time.Time  // wall clock at emission; for authority events the same sample as authority_observed_unix_ms
}

// Encode returns the compact JSON line with its trailing "\n", keys in the hold's
// struct order: schema_version, sequence, event, kind, name, server,
// candidate_id?, term?, fencing_key?, expires_at?, retry_after_ms?, reason_code?,
// authority_remaining_ms?, authority_observed_unix_ms?,
// authority_observed_continuous_ms?, observed_at. Absent fields are omitted,
// never null; strings are escaped as serde_json escapes them.
func (h HoldEvent) Encode() []byte {
	w := newLineWriter()
	w.raw(`{"schema_version":1,"sequence":`)
	w.raw(strconv.FormatUint(h.Sequence, 10))
	for _, kv := range [...][2]string{{"event", h.Event.Event}, {"kind", string(h.Kind)}, {"name", h.Name}, {"server", h.Server}} {
		w.raw(`,"` + kv[0] + `":`)
		w.str(kv[1])
	}
	if h.CandidateID != nil {
		w.raw(`,"candidate_id":`)
		w.str(*h.CandidateID)
	}
	if h.Term != nil {
		w.raw(`,"term":` + strconv.FormatUint(*h.Term, 10))
	}
	if h.FencingKey != "" {
		w.raw(`,"fencing_key":`)
		w.str(h.FencingKey)
	}
	if h.ExpiresAt != nil {
		w.raw(`,"expires_at":`)
		w.str(FormatTimestamp(*h.ExpiresAt))
	}
	if h.RetryAfterMs != nil {
		w.raw(`,"retry_after_ms":` + strconv.FormatUint(*h.RetryAfterMs, 10))
	}
	if h.ReasonCode != "" {
		w.raw(`,"reason_code":`)
		w.str(h.ReasonCode)
	}
	if a := h.Authority; a != nil {
		w.raw(fmt.Sprintf(`,"authority_remaining_ms":%d,"authority_observed_unix_ms":%d,"authority_observed_continuous_ms":%d`,
			a.RemainingMs, a.ObservedUnixMs, a.ObservedContinuousMs))
	}
	w.raw(`,"observed_at":`)
	w.str(FormatTimestamp(h.ObservedAt))
	w.raw("}\n")
	return w.out
}

// FormatTimestamp writes t as the hold does (chrono's RFC 3339 "AutoSi" with a
// literal Z): in UTC, no fraction when the nanoseconds are zero, otherwise the
// shortest of exactly 3, 6 or 9 digits that is exact. Go's RFC3339Nano trims to
// a variable number of digits and would differ on the wire.
func FormatTimestamp(t time.Time) string {
	t = t.UTC()
	base := t.Format("2006-01-02T15:04:05")
	ns := t.Nanosecond()
	switch {
	case ns == 0:
		return base + "Z"
	case ns%1_000_000 == 0:
		return fmt.Sprintf("%s.%03dZ", base, ns/1_000_000)
	case ns%1_000 == 0:
		return fmt.Sprintf("%s.%06dZ", base, ns/1_000)
	default:
		return fmt.Sprintf("%s.%09dZ", base, ns)
	}
}
