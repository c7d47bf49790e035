package events

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// wireNumber is a digit-only JSON integer with its length as sent; the value
// saturates so that over-long fields are judged by Fresh, not by the parser.
type wireNumber struct {
	value  uint64
	digits int
	exact  bool
}

// wireEvent is the type-checked but not yet contract-checked form of a line.
// Pointers distinguish "absent" from the zero value.
type wireEvent struct {
	schema      bool   // schema_version was there (set refuses any value but 1)
	sequence    []byte // judged later, with its own message
	event       *string
	kind        *string
	name        *string
	server      *string
	candidateID *string
	term        *uint64
	reasonCode  *string
	fencingKey  *string
	remaining   *wireNumber
	unix        *wireNumber
	continuous  *wireNumber
}

// lineDecoder is the parser state a Stream reuses from line to line, so that
// a renewal allocates only the strings it keeps. jsontext's defaults are the
// strictness a supervisor needs and encoding/json lacks: invalid UTF-8 (which
// encoding/json turns into U+FFFD) and a name repeated in an object, spelled
// alike or through escapes, are syntax errors, so two parsers can never
// disagree on which "term" counts. Values are read in place, not as a token
// per field (encoding/json's Token API made 190 allocations of one line).
type lineDecoder struct {
	src  bytes.Reader
	dec  jsontext.Decoder
	name []byte
}

// decode checks that line is exactly one JSON object with the types the
// contract requires.
func (d *lineDecoder) decode(line []byte) (wireEvent, error) {
	var w wireEvent
	d.src.Reset(line)
	d.dec.Reset(&d.src)
	dec := &d.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return w, invalid(msgMalformed)
	}
	for dec.PeekKind() != '}' {
		quoted, err := dec.ReadValue()
		if err != nil {
			return w, invalid(msgMalformed)
		}
		// The name is unquoted into a reused buffer; it is compared, never kept.
		if d.name, err = jsontext.AppendUnquote(d.name[:0], quoted); err != nil {
			return w, invalid(msgMalformed)
		}
		raw, err := dec.ReadValue()
		if err != nil {
			return w, invalid(msgMalformed)
		}
		if !w.set(string(d.name), raw) {
			return w, invalid(msgMalformed)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return w, invalid(msgMalformed)
	}
	// Exactly one value: anything after the object but whitespace is corruption.
	if _, err := dec.ReadToken(); err != io.EOF || !w.schema {
		return w, invalid(msgMalformed)
	}
	return w, nil
}

// set stores one field, reporting false when its JSON type breaks the contract.
// Unknown keys are accepted and dropped so the hold can add fields.
// raw is only valid until the decoder reads on, so whatever is kept is copied.
func (w *wireEvent) set(key string, raw jsontext.Value) bool {
	var ok bool
	switch key {
	case "schema_version":
		// Only the literal 1: "1.0" or "1e0" are not what a hold emits.
		w.schema = true
		return string(raw) == "1"
	case "sequence":
		w.sequence = bytes.Clone(raw)
		return true
	case "event":
		w.event, ok = jsonString(raw)
	case "kind":
		w.kind, ok = jsonString(raw)
	case "name":
		w.name, ok = jsonString(raw)
	case "server":
		w.server, ok = jsonString(raw)
	case "reason_code":
		w.reasonCode, ok = jsonString(raw)
	case "fencing_key":
		// Handed to the worker in its environment, which cannot carry NUL.
		w.fencingKey, ok = jsonString(raw)
		ok = ok && *w.fencingKey != "" && !strings.ContainsRune(*w.fencingKey, 0)
	case "candidate_id":
		if isNull(raw) {
			return true
		}
		w.candidateID, ok = jsonString(raw)
	case "term":
		// A term must round-trip exactly: it is handed to the worker as its fence.
		var n wireNumber
		if n, ok = digits(raw); ok && n.exact {
			w.term = &n.value
		} else {
			ok = false
		}
	case "authority_remaining_ms":
		w.remaining, ok = authorityNumber(raw)
	case "authority_observed_unix_ms":
		w.unix, ok = authorityNumber(raw)
	case "authority_observed_continuous_ms":
		w.continuous, ok = authorityNumber(raw)
	default:
		return true
	}
	return ok
}

func isNull(raw jsontext.Value) bool { return raw.Kind() == 'n' }

func jsonString(raw jsontext.Value) (*string, bool) {
	if raw.Kind() != '"' {
		return nil, false
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return nil, false
	}
	s := string(b)
	return &s, true
}

// authorityNumber treats null as absent, matching jq's `// empty` in the reference.
func authorityNumber(raw jsontext.Value) (*wireNumber, bool) {
	if isNull(raw) {
		return nil, true
	}
	n, ok := digits(raw)
	if !ok {
		return nil, false
	}
	return &n, true
}

// digits accepts only a plain run of ASCII digits (JSON already forbids leading
// zeros), so signs, fractions, exponents and strings are all refused.
func digits(raw []byte) (wireNumber, bool) {
	if len(raw) == 0 {
		return wireNumber{}, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return wireNumber{}, false
		}
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return wireNumber{value: math.MaxUint64, digits: len(raw)}, true
	}
	return wireNumber{value: v, digits: len(raw), exact: true}, true
}
