package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// keyOrder is the hold's struct order (docs/protocol.md "Event envelope");
// x_extra is our own unknown field, appended last.
var keyOrder = []string{
	"schema_version", "sequence", "event", "kind", "name", "server",
	"candidate_id", "term", "fencing_key", "expires_at", "retry_after_ms", "reason_code",
	"authority_remaining_ms", "authority_observed_unix_ms",
	"authority_observed_continuous_ms", "observed_at", "x_extra",
}

// numericKeys are the keys string=FIELD may turn into JSON strings.
var numericKeys = map[string]bool{
	"schema_version": true, "sequence": true, "term": true,
	"retry_after_ms": true, "authority_remaining_ms": true,
	"authority_observed_unix_ms": true, "authority_observed_continuous_ms": true,
}

type emitSpec struct {
	event                     string
	term, budget, seq, schema *int64
	retry                     *int64
	wallAge, contAge, future  int64
	kind, name, candidate     *string
	reason, fencingKey        *string
	drop, str                 map[string]bool
	extra                     bool
	// fromSignal marks the shutdown event: it never carries expires_at,
	// like the real hold's released/uncertain after a signal.
	fromSignal bool
}

func parseEmit(rest string) (*emitSpec, error) {
	parts := strings.Split(rest, ",")
	e := &emitSpec{event: parts[0], drop: map[string]bool{}, str: map[string]bool{}}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("option %q is not k=v", p)
		}
		num := func() (*int64, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("option %s=%q: not an integer", k, v)
			}
			return &n, nil
		}
		var err error
		var n *int64
		switch k {
		case "term":
			e.term, err = num()
		case "budget":
			e.budget, err = num()
		case "seq":
			e.seq, err = num()
		case "schema":
			e.schema, err = num()
		case "retry":
			e.retry, err = num()
		case "wall_age", "cont_age", "future":
			if n, err = num(); err == nil {
				switch k {
				case "wall_age":
					e.wallAge = *n
				case "cont_age":
					e.contAge = *n
				default:
					e.future = *n
				}
			}
		case "kind":
			e.kind = &v
		case "name":
			e.name = &v
		case "candidate":
			e.candidate = &v
		case "reason":
			e.reason = &v
		case "key":
			e.fencingKey = &v
		case "drop":
			if !knownKey(v) {
				return nil, fmt.Errorf("drop=%s: unknown field", v)
			}
			e.drop[v] = true
		case "string":
			if !numericKeys[v] {
				return nil, fmt.Errorf("string=%s: not a numeric field", v)
			}
			e.str[v] = true
		case "extra":
			if v != "1" {
				return nil, fmt.Errorf("extra=%s: only extra=1 is defined", v)
			}
			e.extra = true
		default:
			return nil, fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

func knownKey(k string) bool {
	for _, o := range keyOrder {
		if o == k {
			return true
		}
	}
	return false
}

// hold is the emitter state shared by the step runner and the signal
// goroutine; lock (a one-slot channel, so the signal path can time out)
// serialises every write to stdout and every exit.
type hold struct {
	cfg         *config
	lock        chan struct{}
	out         *os.File
	nextSeq     int64
	term        int64
	haveTerm    bool
	authority   bool
	lastExpires string
}

func newHold(cfg *config) *hold {
	return &hold{cfg: cfg, lock: make(chan struct{}, 1), out: os.Stdout, nextSeq: 1, term: 1}
}

func (h *hold) withLock(f func()) {
	h.lock <- struct{}{}
	defer func() { <-h.lock }()
	f()
}

// writeLocked issues a single write on fd 1 (os.File is unbuffered and
// retries short writes), so each line reaches the reader as soon as it is
// produced. A failed write (e.g. after closeout) is reported, not fatal: a
// hold only ends through exit: or a signal.
func (h *hold) writeLocked(b []byte) {
	if _, err := h.out.Write(b); err != nil {
		fmt.Fprintf(os.Stderr, "fakehold: write stdout: %v\n", err)
	}
}

type field struct {
	key string
	num *int64
	str *string
	raw string
}

func (h *hold) emitLocked(e *emitSpec) {
	cfg := h.cfg
	kind, name, cand := cfg.kind, cfg.name, cfg.candidate
	if e.kind != nil {
		kind = *e.kind
	}
	if e.name != nil {
		name = *e.name
	}
	withCand := kind == "election"
	if e.candidate != nil {
		cand, withCand = *e.candidate, true
	}

	seq := h.nextSeq
	if e.seq != nil {
		seq = *e.seq
	}
	h.nextSeq = seq + 1
	if e.term != nil {
		h.term, h.haveTerm = *e.term, true
	}

	// Sample the wall clock first and the continuous clock second, as the
	// real hold does, so any pause between samples can only age the event.
	wall := time.Now()
	var cont int64
	if e.budget != nil {
		c, err := continuousMillis()
		if err != nil { // checked at startup; unreachable in practice
			fmt.Fprintf(os.Stderr, "fakehold: continuous clock: %v\n", err)
			os.Exit(exitUsage)
		}
		cont = c
	}
	observed := wall.Add(time.Duration(e.future-e.wallAge) * time.Millisecond)

	var fs []field
	i64 := func(k string, v int64) { fs = append(fs, field{key: k, num: &v}) }
	str := func(k, v string) { fs = append(fs, field{key: k, str: &v}) }

	schema := int64(1)
	if e.schema != nil {
		schema = *e.schema
	}
	i64("schema_version", schema)
	i64("sequence", seq)
	str("event", e.event)
	str("kind", kind)
	str("name", name)
	str("server", cfg.server)
	if withCand {
		str("candidate_id", cand)
	}

	authorityEvent := e.event == "leader" || e.event == "acquired" || e.event == "renewed"
	switch {
	case authorityEvent || e.event == "lost":
		i64("term", h.term)
		h.haveTerm = true
	case (e.event == "released" || e.event == "uncertain") && h.haveTerm:
		i64("term", h.term)
	case e.term != nil:
		i64("term", h.term)
	}

	if e.fencingKey != nil {
		str("fencing_key", *e.fencingKey)
	}

	switch {
	case authorityEvent:
		ttl := 30 * time.Second
		if e.budget != nil {
			ttl = time.Duration(*e.budget) * time.Millisecond * 5 / 4 // budget is 80 % of the TTL
		}
		h.lastExpires = events.FormatTimestamp(observed.Add(ttl))
		str("expires_at", h.lastExpires)
	case (e.event == "lost" || e.event == "uncertain") && !e.fromSignal && h.lastExpires != "":
		str("expires_at", h.lastExpires)
	}

	if e.retry != nil {
		i64("retry_after_ms", *e.retry)
	} else if e.event == "waiting" {
		i64("retry_after_ms", 1000)
	}

	if r, ok := defaultReason(e.event, kind, h.haveTerm); e.reason != nil {
		str("reason_code", *e.reason)
	} else if ok {
		str("reason_code", r)
	}

	if e.budget != nil {
		i64("authority_remaining_ms", *e.budget)
		i64("authority_observed_unix_ms", wall.UnixMilli()-e.wallAge+e.future)
		i64("authority_observed_continuous_ms", cont-e.contAge+e.future)
	}
	str("observed_at", events.FormatTimestamp(observed))
	if e.extra {
		fs = append(fs, field{key: "x_extra", raw: `{"a":[1,2]}`})
	}

	if e.event == "leader" || e.event == "acquired" {
		h.authority = true
	}
	line := encode(fs, e)
	written := time.Now()
	h.writeLocked(line)
	if cfg.stamps != "" {
		// Benchmarks measure from the instant the line entered the pipe.
		if err := appendLine(cfg.stamps, fmt.Sprintf("%s %d\n", e.event, written.UnixNano())); err != nil {
			fmt.Fprintf(os.Stderr, "fakehold: --stamps: %v\n", err)
		}
	}
}

func defaultReason(event, kind string, haveTerm bool) (string, bool) {
	switch event {
	case "waiting":
		if kind == "lock" {
			return "held", true
		}
		return "follower", true
	case "released":
		return "signal", true
	case "lost":
		if kind == "lock" {
			return "lease_changed", true
		}
		return "term_changed", true
	case "uncertain":
		if haveTerm {
			return "renewal_deadline_exceeded", true
		}
		return "initial_authority_deadline_exceeded", true
	case "error":
		return "acquire_timeout", true
	}
	return "", false
}

// encode renders the fields as one compact JSON object plus "\n". Strings
// use an encoder without HTML escaping to match serde_json byte for byte.
func encode(fs []field, e *emitSpec) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, f := range fs {
		if e.drop[f.key] {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(jsonString(f.key))
		b.WriteByte(':')
		switch {
		case f.num != nil && e.str[f.key]:
			b.Write(jsonString(strconv.FormatInt(*f.num, 10)))
		case f.num != nil:
			b.WriteString(strconv.FormatInt(*f.num, 10))
		case f.str != nil:
			b.Write(jsonString(*f.str))
		default:
			b.WriteString(f.raw)
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// appendLine appends s with one O_APPEND write.
func appendLine(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
