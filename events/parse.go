package events

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
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
	sequence    json.RawMessage // judged later, with its own message
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

// decodeLine checks that line is exactly one JSON object with the types the
// contract requires. It walks the object token by token rather than
// unmarshalling into a map so duplicate keys are caught: two parsers disagreeing
// on which "term" counts is not a question the supervisor should have to answer.
func decodeLine(line []byte) (wireEvent, error) {
	var w wireEvent
	// encoding/json silently turns invalid UTF-8 into U+FFFD; a hold (serde_json)
	// never emits it, so treat it as corruption instead of comparing mangled names.
	if !utf8.Valid(line) || !json.Valid(line) {
		return w, invalid(msgMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return w, invalid(msgMalformed)
	}
	seen := make(map[string]bool)
	schemaSeen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return w, invalid(msgMalformed)
		}
		key, ok := tok.(string)
		if !ok || seen[key] {
			return w, invalid(msgMalformed)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return w, invalid(msgMalformed)
		}
		if key == "schema_version" {
			schemaSeen = true
		}
		if !w.set(key, raw) {
			return w, invalid(msgMalformed)
		}
	}
	if !schemaSeen {
		return w, invalid(msgMalformed)
	}
	return w, nil
}

// set stores one field, reporting false when its JSON type breaks the contract.
// Unknown keys are accepted and dropped so the hold can add fields.
func (w *wireEvent) set(key string, raw json.RawMessage) bool {
	var ok bool
	switch key {
	case "schema_version":
		// Only the literal 1: "1.0" or "1e0" are not what a hold emits.
		return string(raw) == "1"
	case "sequence":
		w.sequence = raw
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

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

func jsonString(raw json.RawMessage) (*string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return nil, false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false
	}
	return &s, true
}

// authorityNumber treats null as absent, matching jq's `// empty` in the reference.
func authorityNumber(raw json.RawMessage) (*wireNumber, bool) {
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
func digits(raw json.RawMessage) (wireNumber, bool) {
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
