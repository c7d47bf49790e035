package events

import (
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

// Encode returns the compact JSON line with its trailing "\n" (Append).
func (h HoldEvent) Encode() []byte { return h.Append(nil) }

// Append appends the compact JSON line with its trailing "\n" to b, keys in
// the hold's struct order: schema_version, sequence, event, kind, name,
// server, candidate_id?, term?, fencing_key?, expires_at?, retry_after_ms?,
// reason_code?, authority_remaining_ms?, authority_observed_unix_ms?,
// authority_observed_continuous_ms?, observed_at. Absent fields are omitted,
// never null; strings are escaped as serde_json escapes them. A hold that
// keeps b across lines writes each renewal without allocating.
func (h HoldEvent) Append(b []byte) []byte {
	b = append(b, `{"schema_version":1,"sequence":`...)
	b = strconv.AppendUint(b, h.Sequence, 10)
	b = appendField(b, "event", h.Event.Event)
	b = appendField(b, "kind", string(h.Kind))
	b = appendField(b, "name", h.Name)
	b = appendField(b, "server", h.Server)
	if h.CandidateID != nil {
		b = appendField(b, "candidate_id", *h.CandidateID)
	}
	if h.Term != nil {
		b = append(b, `,"term":`...)
		b = strconv.AppendUint(b, *h.Term, 10)
	}
	if h.FencingKey != "" {
		b = appendField(b, "fencing_key", h.FencingKey)
	}
	if h.ExpiresAt != nil {
		b = append(b, `,"expires_at":"`...)
		b = append(AppendTimestamp(b, *h.ExpiresAt), '"')
	}
	if h.RetryAfterMs != nil {
		b = append(b, `,"retry_after_ms":`...)
		b = strconv.AppendUint(b, *h.RetryAfterMs, 10)
	}
	if h.ReasonCode != "" {
		b = appendField(b, "reason_code", h.ReasonCode)
	}
	if a := h.Authority; a != nil {
		b = append(b, `,"authority_remaining_ms":`...)
		b = strconv.AppendUint(b, a.RemainingMs, 10)
		b = append(b, `,"authority_observed_unix_ms":`...)
		b = strconv.AppendUint(b, a.ObservedUnixMs, 10)
		b = append(b, `,"authority_observed_continuous_ms":`...)
		b = strconv.AppendUint(b, a.ObservedContinuousMs, 10)
	}
	b = append(b, `,"observed_at":"`...)
	b = AppendTimestamp(b, h.ObservedAt)
	return append(b, "\"}\n"...)
}

// FormatTimestamp writes t as the hold does (AppendTimestamp).
func FormatTimestamp(t time.Time) string { return string(AppendTimestamp(nil, t)) }

// AppendTimestamp appends t as the hold writes it (chrono's RFC 3339 "AutoSi"
// with a literal Z): in UTC, no fraction when the nanoseconds are zero,
// otherwise the shortest of exactly 3, 6 or 9 digits that is exact. Go's
// RFC3339Nano trims to a variable number of digits and would differ on the
// wire. The result needs no JSON escaping.
func AppendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	ns := t.Nanosecond()
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		b = appendFraction(b, ns, 3)
	case ns%1_000 == 0:
		b = appendFraction(b, ns, 6)
	default:
		b = appendFraction(b, ns, 9)
	}
	return append(b, 'Z')
}

// appendFraction appends "." and the first digits of ns's nine.
func appendFraction(b []byte, ns, digits int) []byte {
	var d [9]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	return append(append(b, '.'), d[:digits]...)
}
