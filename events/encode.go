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

// Encode returns the compact line with its trailing newline. The key order is
// written out by hand because downstream scripts match exact substrings and
// the order is part of the contract, not an accident of struct layout.
func (l Line) Encode() []byte {
	w := newLineWriter()
	w.raw(`{"schema_version":1,"source":`)
	w.str(source)
	w.raw(`,"sequence":`)
	w.raw(strconv.FormatUint(l.Sequence, 10))
	w.raw(`,"event":`)
	w.str(l.Event)
	w.raw(`,"kind":`)
	w.str(string(l.Kind))
	w.raw(`,"name":`)
	w.str(l.Name)
	if l.CandidateID != nil {
		w.raw(`,"candidate_id":`)
		w.str(*l.CandidateID)
	}
	if l.Term != nil {
		w.raw(`,"term":`)
		w.raw(strconv.FormatUint(*l.Term, 10))
	}
	if l.ReasonCode != "" {
		w.raw(`,"reason_code":`)
		w.str(l.ReasonCode)
	}
	if l.WorkerExitCode != nil {
		w.raw(`,"worker_exit_code":`)
		w.raw(strconv.Itoa(*l.WorkerExitCode))
	}
	if c := l.Containment; c != nil {
		w.raw(`,"containment":{"backend":`)
		w.str(c.Backend)
		w.raw(`,"proven_empty":`)
		w.raw(strconv.FormatBool(c.ProvenEmpty))
		w.raw(`,"killed":`)
		w.raw(strconv.Itoa(c.Killed))
		w.raw(`,"duration_ms":`)
		w.raw(strconv.FormatInt(c.DurationMs, 10))
		if c.Limit != "" {
			w.raw(`,"limit":`)
			w.str(c.Limit)
		}
		w.raw(`}`)
	}
	w.raw("}\n")
	return w.out
}

// lineWriter builds one line; it is built per call so Encode stays free of
// shared state.
type lineWriter struct {
	out []byte
}

func newLineWriter() *lineWriter { return &lineWriter{out: make([]byte, 0, 256)} }

func (w *lineWriter) raw(s string) { w.out = append(w.out, s...) }

// str quotes s as serde_json (the hold's encoder) does, which is jsontext's
// default: only '"', '\\' and control characters are escaped (\b \f \n \r \t
// short, the rest as lowercase \u00xx); < > & and U+2028/U+2029 stay raw,
// where encoding/json escapes the last two even with HTML escaping off. The
// only error is invalid UTF-8, which is written as U+FFFD like serde_json's
// lossy strings; the fields come from checked lines and our own constants.
func (w *lineWriter) str(s string) {
	w.out, _ = jsontext.AppendQuote(w.out, s)
}
