package events

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// source marks the supervisor's own lines; the worker shares stdout, so
// consumers need it to tell the two apart (it is not proof of origin).
const source = "octostore-supervisor"

// Containment reports how the protected groups were proven empty.
type Containment struct {
	Backend     string
	ProvenEmpty bool
	Killed      int
	DurationMs  int64
	// Limit is what the proof cannot cover on this platform (macOS only, see
	// contain.Report.Limit). It is written only when set, so Linux and
	// Windows lines keep their exact bytes.
	Limit string
	// The worker group's usage and what ended it, where known (see
	// contain.Report); each is written only when set, after the fields
	// above, so a line without them keeps the reference's bytes.
	CPUMicros       uint64
	MemoryPeakBytes uint64
	OOMKills        uint64
	LimitHit        string
	Signal          int
}

// Line is one supervisor stdout line. Optional fields are omitted when unset,
// never written as null.
type Line struct {
	Sequence       uint64
	Event          string
	Kind           Kind
	Name           string
	CandidateID    *string
	Term           *uint64
	ReasonCode     string
	WorkerExitCode *int
	Containment    *Containment
}

// LineFor re-emits an accepted hold event. candidate_id is kept only for
// elections because locks carry no candidate identity.
func LineFor(ev Event) Line {
	l := Line{
		Sequence:   ev.Sequence,
		Event:      ev.Event,
		Kind:       ev.Kind,
		Name:       ev.Name,
		ReasonCode: ev.ReasonCode,
	}
	if ev.Kind == Election && ev.CandidateID != nil {
		c := *ev.CandidateID
		l.CandidateID = &c
	}
	if ev.Term != nil {
		t := *ev.Term
		l.Term = &t
	}
	return l
}

// Encode returns the compact line with its trailing newline.
func (l Line) Encode() []byte { return l.Append(nil) }

// Append appends the compact line with its trailing newline to b. The key
// order is written out by hand because downstream scripts match exact
// substrings and the order is part of the contract, not an accident of struct
// layout. A caller that keeps b across lines writes each without allocating.
func (l Line) Append(b []byte) []byte {
	b = append(b, `{"schema_version":1,"source":`...)
	b = appendQuoted(b, source)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, l.Sequence, 10)
	b = appendField(b, "event", l.Event)
	b = appendField(b, "kind", string(l.Kind))
	b = appendField(b, "name", l.Name)
	if l.CandidateID != nil {
		b = appendField(b, "candidate_id", *l.CandidateID)
	}
	if l.Term != nil {
		b = append(b, `,"term":`...)
		b = strconv.AppendUint(b, *l.Term, 10)
	}
	if l.ReasonCode != "" {
		b = appendField(b, "reason_code", l.ReasonCode)
	}
	if l.WorkerExitCode != nil {
		b = append(b, `,"worker_exit_code":`...)
		b = strconv.AppendInt(b, int64(*l.WorkerExitCode), 10)
	}
	if c := l.Containment; c != nil {
		b = append(b, `,"containment":{"backend":`...)
		b = appendQuoted(b, c.Backend)
		b = append(b, `,"proven_empty":`...)
		b = strconv.AppendBool(b, c.ProvenEmpty)
		b = append(b, `,"killed":`...)
		b = strconv.AppendInt(b, int64(c.Killed), 10)
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, c.DurationMs, 10)
		if c.Limit != "" {
			b = appendField(b, "limit", c.Limit)
		}
		b = c.appendUsage(b)
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// appendUsage appends the containment's optional usage fields, in the order
// of contain.Report's JSON (run's summary), each only when set.
func (c *Containment) appendUsage(b []byte) []byte {
	for _, f := range []struct {
		name string
		v    uint64
	}{{"cpu_usec", c.CPUMicros}, {"memory_peak_bytes", c.MemoryPeakBytes}, {"oom_kills", c.OOMKills}} {
		if f.v > 0 {
			b = append(b, `,"`...)
			b = append(b, f.name...)
			b = append(b, `":`...)
			b = strconv.AppendUint(b, f.v, 10)
		}
	}
	if c.LimitHit != "" {
		b = appendField(b, "limit_hit", c.LimitHit)
	}
	if c.Signal != 0 {
		b = append(b, `,"signal":`...)
		b = strconv.AppendInt(b, int64(c.Signal), 10)
	}
	return b
}

// appendField appends ,"name":"value" with value quoted (appendQuoted).
func appendField(b []byte, name, value string) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return appendQuoted(b, value)
}

// appendQuoted quotes s as serde_json (the hold's encoder) does, which is
// jsontext's default: only '"', '\\' and control characters are escaped (\b
// \f \n \r \t short, the rest as lowercase \u00xx); < > & and U+2028/U+2029
// stay raw, where encoding/json escapes the last two even with HTML escaping
// off. The only error is invalid UTF-8, which is written as U+FFFD like
// serde_json's lossy strings; the fields come from checked lines and our own
// constants.
func appendQuoted(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}
