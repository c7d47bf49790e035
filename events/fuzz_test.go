package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// FuzzStreamNext feeds a newline-separated batch of lines to one stream and
// checks the invariants the supervisor relies on, whatever the bytes.
func FuzzStreamNext(f *testing.F) {
	seeds := []string{
		elEvent(1, Waiting) + "\n" + elLeader(2, 7) + "\n" + el(`"sequence":3,"event":"renewed","term":7,`+auth(2000)) + "\n" + el(`"sequence":4,"event":"released","term":7`),
		elLeader(1, 7) + "\n" + elLeader(2, 7),
		elLeader(1, 0),
		elLeader(1, 7) + "\n" + elEvent(1, Waiting),
		elLeader(1, 7) + "\n" + elEvent(2, Waiting),
		el(`"sequence":1,"event":"acquired","term":7,` + auth(3000)),
		lk(`"sequence":1,"event":"acquired","term":42,`+auth(3000)) + "\n" + lk(`"sequence":2,"event":"lost","term":42,"reason_code":"lease_changed"`),
		lk(`"sequence":1,"event":"leader","term":42,` + auth(3000)),
		lk(`"sequence":1,"event":"waiting","candidate_id":"x"`),
		elEvent(1, "paused\u001b[2J"),
		`not json`,
		``,
		`{"schema_version":1}{"schema_version":1}`,
		el(`"sequence":18446744073709551616,"event":"waiting"`),
		el(`"sequence":1,"event":"waiting","term":"7","authority_remaining_ms":3e3`),
		el(`"sequence":1,"event":"waiting","sequence":2`),
		el(`"sequence":1,"event":"lost","term":7,"reason_code":"a<b>&\"\u2028"`),
		strings.Replace(elEvent(1, Waiting), testRoom, "a<\"\n\u2028é", 1),
	}
	for _, s := range seeds {
		f.Add(false, []byte(s))
		f.Add(true, []byte(strings.ReplaceAll(strings.ReplaceAll(s, `"kind":"election"`, `"kind":"lock"`), testRoom, testLock)))
	}
	f.Fuzz(func(t *testing.T, isLock bool, batch []byte) {
		expect := electionTarget()
		if isLock {
			expect = lockTarget()
		}
		s := NewStream(expect)
		var lastSeq uint64
		starts := 0
		for _, line := range bytes.Split(batch, []byte("\n")) {
			ev, err := s.Next(line)
			if err != nil {
				checkFuzzError(t, err)
				continue
			}
			checkAccepted(t, expect, ev, lastSeq)
			lastSeq = ev.Sequence
			if ev.StartsAuthority() {
				starts++
				if starts > 1 {
					t.Fatalf("authority started twice")
				}
			}
			checkLineRoundTrip(t, ev)
		}
	})
}

func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrInvalid) == errors.Is(err, ErrDoubt) {
		t.Fatalf("error %q must wrap exactly one class", err)
	}
	msg := err.Error()
	if msg == "" {
		t.Fatalf("empty error message")
	}
	for _, r := range msg {
		if !unicode.IsPrint(r) {
			t.Fatalf("error message %q is not terminal-safe", msg)
		}
	}
	if strings.HasPrefix(msg, "unknown hold event '") && len(msg) > len("unknown hold event ''; refusing to continue work")+maxEchoBytes {
		t.Fatalf("echoed event name not capped: %q", msg)
	}
}

func checkAccepted(t *testing.T, expect Expect, ev Event, lastSeq uint64) {
	t.Helper()
	if ev.Kind != expect.Kind || ev.Name != expect.Name {
		t.Fatalf("accepted event for the wrong target: %+v", ev)
	}
	if expect.Kind == Election && (ev.CandidateID == nil || *ev.CandidateID != expect.Candidate) {
		t.Fatalf("accepted election event for the wrong candidate")
	}
	if expect.Kind == Lock && ev.CandidateID != nil && *ev.CandidateID != "" {
		t.Fatalf("accepted lock event with a candidate")
	}
	if ev.Sequence <= lastSeq {
		t.Fatalf("sequence %d did not increase over %d", ev.Sequence, lastSeq)
	}
	if ev.StartsAuthority() && (ev.Term == nil || *ev.Term == 0 || ev.Authority == nil) {
		t.Fatalf("authority start accepted without term or budget: %+v", ev)
	}
	if (ev.Event == Leader && expect.Kind != Election) || (ev.Event == Acquired && expect.Kind != Lock) {
		t.Fatalf("authority start %q accepted for %s", ev.Event, expect.Kind)
	}
}

func checkLineRoundTrip(t *testing.T, ev Event) {
	t.Helper()
	out := LineFor(ev).Encode()
	if !bytes.HasSuffix(out, []byte("\n")) || bytes.Count(out, []byte("\n")) != 1 {
		t.Fatalf("encoded line must end in exactly one newline: %q", out)
	}
	if !json.Valid(out) {
		t.Fatalf("encoded line is not JSON: %q", out)
	}
	var back struct {
		Sequence json.Number `json:"sequence"`
		Event    string      `json:"event"`
		Name     string      `json:"name"`
		Term     *uint64     `json:"term"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	if back.Sequence.String() != strconv.FormatUint(ev.Sequence, 10) || back.Event != ev.Event || back.Name != ev.Name {
		t.Fatalf("round trip changed the line: %q vs %+v", out, ev)
	}
	if (back.Term == nil) != (ev.Term == nil) || (back.Term != nil && *back.Term != *ev.Term) {
		t.Fatalf("round trip changed the term: %q", out)
	}
}
