package hold

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

// Golden tests: the JSONL a hold prints must be byte-for-byte what the
// upstream CLI prints (docs/protocol.md "Event envelope", "Events"), because
// the supervisor and downstream scripts match exact substrings. The expected
// lines below are upstream's example lines verbatim; where those elide a
// timestamp a concrete one is filled in, chosen so that between them the lines
// use 0, 3, 6 and 9 fractional digits (docs/protocol.md "Timestamps").

// wallAt is a Clock whose wall clock reads a fixed instant (non-authority
// events take observed_at from it).
type wallAt struct{ t time.Time }

func (w wallAt) Scheduler() time.Time             { return w.t }
func (w wallAt) ContinuousMillis() (int64, error) { return 0, nil }
func (w wallAt) Wall() time.Time                  { return w.t }

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

// writeRecorder keeps every Write call separately, to prove each event is
// one write of one complete line (what "flush each JSONL line" needs).
type writeRecorder struct{ writes [][]byte }

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

type goldenCase struct {
	name      string
	kind      events.Kind
	target    string
	server    string
	seq       uint64
	event     string
	term      uint64 // 0 = absent (see TestGoldenZeroTermAndEscaping for a present 0)
	expires   string
	retry     uint64 // 0 = absent
	reason    string
	remaining int64 // > 0: an authority event
	contMS    int64
	observed  string
	want      string
}

const (
	goldenRoom   = "g15BTc54MStBoX-momDJm6uBhJQKKtqQ"
	goldenHosted = "https://api.octostore.io"
	goldenLock   = "repo/octostore/issue-1842"
	goldenLocal  = "http://127.0.0.1:3000"
)

var goldenCases = []goldenCase{
	// Upstream's election example lines.
	{name: "election waiting follower", kind: events.Election, target: goldenRoom, server: goldenHosted, seq: 1, event: events.Waiting,
		retry: 14210, reason: ReasonFollower, observed: "2026-08-02T12:00:00.118204711Z",
		want: `{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","retry_after_ms":14210,"reason_code":"follower","observed_at":"2026-08-02T12:00:00.118204711Z"}`},
	{name: "election waiting rate_limited", kind: events.Election, target: goldenRoom, server: goldenHosted, seq: 2, event: events.Waiting,
		retry: 31744, reason: "rate_limited", observed: "2026-08-02T12:00:14.391512003Z",
		want: `{"schema_version":1,"sequence":2,"event":"waiting","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","retry_after_ms":31744,"reason_code":"rate_limited","observed_at":"2026-08-02T12:00:14.391512003Z"}`},
	{name: "election leader", kind: events.Election, target: goldenRoom, server: goldenHosted, seq: 3, event: events.Leader,
		term: 12, expires: "2026-08-02T12:00:45.501234567Z", remaining: 23912, contMS: 99500123, observed: "2026-08-02T12:00:15.589012345Z",
		want: `{"schema_version":1,"sequence":3,"event":"leader","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:45.501234567Z","authority_remaining_ms":23912,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123,"observed_at":"2026-08-02T12:00:15.589012345Z"}`},
	{name: "election renewed", kind: events.Election, target: goldenRoom, server: goldenHosted, seq: 4, event: events.Renewed,
		term: 12, expires: "2026-08-02T12:00:59.014310772Z", remaining: 23903, contMS: 99513636, observed: "2026-08-02T12:00:29.102907113Z",
		want: `{"schema_version":1,"sequence":4,"event":"renewed","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:59.014310772Z","authority_remaining_ms":23903,"authority_observed_unix_ms":1785672029102,"authority_observed_continuous_ms":99513636,"observed_at":"2026-08-02T12:00:29.102907113Z"}`},
	{name: "election lost", kind: events.Election, target: goldenRoom, server: goldenHosted, seq: 5, event: events.Lost,
		term: 12, expires: "2026-08-02T12:00:59.014310772Z", reason: "lease_not_current", observed: "2026-08-02T12:00:43.210Z",
		want: `{"schema_version":1,"sequence":5,"event":"lost","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:59.014310772Z","reason_code":"lease_not_current","observed_at":"2026-08-02T12:00:43.210Z"}`},
	{name: "election uncertain renewal deadline", kind: events.Election, target: "ROOM", server: goldenHosted, seq: 5, event: events.Uncertain,
		term: 12, expires: "2026-08-02T12:00:59.014310772Z", reason: ReasonRenewalDeadlineExceeded, observed: "2026-08-02T12:00:52.014310Z",
		want: `{"schema_version":1,"sequence":5,"event":"uncertain","kind":"election","name":"ROOM","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:59.014310772Z","reason_code":"renewal_deadline_exceeded","observed_at":"2026-08-02T12:00:52.014310Z"}`},
	{name: "election released", kind: events.Election, target: "ROOM", server: goldenHosted, seq: 5, event: events.Released,
		term: 12, reason: ReasonSignal, observed: "2026-08-02T12:00:50Z",
		want: `{"schema_version":1,"sequence":5,"event":"released","kind":"election","name":"ROOM","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"reason_code":"signal","observed_at":"2026-08-02T12:00:50Z"}`},
	{name: "election uncertain release unconfirmed", kind: events.Election, target: "ROOM", server: goldenHosted, seq: 5, event: events.Uncertain,
		term: 12, reason: ReasonReleaseUnconfirmed, observed: "2026-08-02T12:00:50.500Z",
		want: `{"schema_version":1,"sequence":5,"event":"uncertain","kind":"election","name":"ROOM","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"reason_code":"release_unconfirmed","observed_at":"2026-08-02T12:00:50.500Z"}`},
	{name: "election uncertain initial deadline", kind: events.Election, target: "ROOM", server: goldenHosted, seq: 1, event: events.Uncertain,
		reason: ReasonInitialAuthorityDeadline, observed: "2026-08-02T12:00:04.000001Z",
		want: `{"schema_version":1,"sequence":1,"event":"uncertain","kind":"election","name":"ROOM","server":"https://api.octostore.io","candidate_id":"agent-a","reason_code":"initial_authority_deadline_exceeded","observed_at":"2026-08-02T12:00:04.000001Z"}`},
	{name: "election error acquire timeout", kind: events.Election, target: "ROOM", server: goldenHosted, seq: 2, event: events.Error,
		reason: ReasonAcquireTimeout, observed: "2026-08-02T12:00:01.000000001Z",
		want: `{"schema_version":1,"sequence":2,"event":"error","kind":"election","name":"ROOM","server":"https://api.octostore.io","candidate_id":"agent-a","reason_code":"acquire_timeout","observed_at":"2026-08-02T12:00:01.000000001Z"}`},
	// Upstream's lock example lines.
	{name: "lock waiting held", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 1, event: events.Waiting,
		retry: 52311, reason: ReasonHeld, observed: "2026-08-02T12:00:00.118204711Z",
		want: `{"schema_version":1,"sequence":1,"event":"waiting","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","retry_after_ms":52311,"reason_code":"held","observed_at":"2026-08-02T12:00:00.118204711Z"}`},
	{name: "lock waiting delayed", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 2, event: events.Waiting,
		retry: 4519, reason: reasonDelayed, observed: "2026-08-02T12:00:10.5Z",
		want: `{"schema_version":1,"sequence":2,"event":"waiting","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","retry_after_ms":4519,"reason_code":"delayed","observed_at":"2026-08-02T12:00:10.500Z"}`},
	{name: "lock acquired", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 3, event: events.Acquired,
		term: 42, expires: "2026-08-02T12:02:15.600000123Z", remaining: 23930, contMS: 99500123, observed: "2026-08-02T12:00:15.589012345Z",
		want: `{"schema_version":1,"sequence":3,"event":"acquired","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"expires_at":"2026-08-02T12:02:15.600000123Z","authority_remaining_ms":23930,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123,"observed_at":"2026-08-02T12:00:15.589012345Z"}`},
	{name: "lock renewed", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 4, event: events.Renewed,
		term: 42, expires: "2026-08-02T12:02:15.600000123Z", remaining: 23991, contMS: 99515124, observed: "2026-08-02T12:00:30.590101010Z",
		want: `{"schema_version":1,"sequence":4,"event":"renewed","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"expires_at":"2026-08-02T12:02:15.600000123Z","authority_remaining_ms":23991,"authority_observed_unix_ms":1785672030590,"authority_observed_continuous_ms":99515124,"observed_at":"2026-08-02T12:00:30.590101010Z"}`},
	{name: "lock lost", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 5, event: events.Lost,
		term: 42, expires: "2026-08-02T12:02:15.600000123Z", reason: "lease_not_current", observed: "2026-08-02T12:00:31Z",
		want: `{"schema_version":1,"sequence":5,"event":"lost","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"expires_at":"2026-08-02T12:02:15.600000123Z","reason_code":"lease_not_current","observed_at":"2026-08-02T12:00:31Z"}`},
	{name: "lock uncertain session deadline", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 5, event: events.Uncertain,
		term: 42, expires: "2026-08-02T12:02:15Z", reason: reasonSessionConfirmationDeadline, observed: "2026-08-02T12:00:39.589012Z",
		want: `{"schema_version":1,"sequence":5,"event":"uncertain","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"expires_at":"2026-08-02T12:02:15Z","reason_code":"session_confirmation_deadline_exceeded","observed_at":"2026-08-02T12:00:39.589012Z"}`},
	{name: "lock released", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 5, event: events.Released,
		term: 42, reason: ReasonSignal, observed: "2026-08-02T12:00:35.001Z",
		want: `{"schema_version":1,"sequence":5,"event":"released","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"reason_code":"signal","observed_at":"2026-08-02T12:00:35.001Z"}`},
	{name: "lock error acquire timeout", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 3, event: events.Error,
		reason: ReasonAcquireTimeout, observed: "2026-08-02T12:00:02Z",
		want: `{"schema_version":1,"sequence":3,"event":"error","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","reason_code":"acquire_timeout","observed_at":"2026-08-02T12:00:02Z"}`},
	// docs/protocol.md "Events" variants without an upstream example line.
	{name: "lock uncertain release unconfirmed", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 5, event: events.Uncertain,
		term: 42, reason: ReasonReleaseUnconfirmed, observed: "2026-08-02T12:00:35.000100Z",
		want: `{"schema_version":1,"sequence":5,"event":"uncertain","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"reason_code":"release_unconfirmed","observed_at":"2026-08-02T12:00:35.000100Z"}`},
	{name: "lock uncertain pre-authority keepalive mismatch", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 2, event: events.Uncertain,
		reason: codeSessionIdentityMismatch, observed: "2026-08-02T12:00:16Z",
		want: `{"schema_version":1,"sequence":2,"event":"uncertain","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","reason_code":"session_identity_mismatch","observed_at":"2026-08-02T12:00:16Z"}`},
	{name: "lock error non-retryable code", kind: events.Lock, target: goldenLock, server: goldenLocal, seq: 1, event: events.Error,
		reason: "lock_limit_exceeded", observed: "2026-08-02T12:00:00.100Z",
		want: `{"schema_version":1,"sequence":1,"event":"error","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","reason_code":"lock_limit_exceeded","observed_at":"2026-08-02T12:00:00.100Z"}`},
}

func (c goldenCase) emit(t *testing.T, out *writeRecorder, candidate *string, termPresent bool) {
	t.Helper()
	observed := ts(t, c.observed)
	e := &Emitter{out: out, clock: wallAt{observed}, kind: c.kind, name: c.target, server: c.server, candidate: candidate, seq: c.seq - 1}
	f := Fields{Reason: c.reason}
	if c.term != 0 || termPresent {
		term := c.term
		f.Term = &term
	}
	if c.expires != "" {
		exp := ts(t, c.expires)
		f.ExpiresAt = &exp
	}
	if c.retry != 0 {
		r := c.retry
		f.RetryAfter = &r
	}
	if c.remaining > 0 {
		f.Authority = &AuthorityObservation{RemainingMS: c.remaining, ObservedAt: observed, ContinuousMS: c.contMS}
	}
	e.Emit(c.event, f)
}

// TestGoldenEventBytes pins every event kind (waiting, leader, acquired,
// renewed, released, lost, uncertain in its three shapes, error) for both
// primitives to upstream's lines byte for byte
// (docs/protocol.md "Event envelope", "Events"): key order, fields absent
// rather than null, candidate_id on every election line and never on a lock
// line, AutoSi timestamps with 0/3/6/9 digits, compact JSON, one write per
// line.
func TestGoldenEventBytes(t *testing.T) {
	digits := map[int]bool{}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			var out writeRecorder
			var cand *string
			if c.kind == events.Election {
				a := "agent-a"
				cand = &a
			}
			c.emit(t, &out, cand, false)
			require.Len(t, out.writes, 1, "one event must be one write")
			require.Equal(t, c.want+"\n", string(out.writes[0]))
			// The line satisfies the shape rules the live-run tests apply.
			held := c.event == events.Uncertain && c.term != 0
			checkShape(t, c.kind, out.writes[0][:len(out.writes[0])-1], held)
			// Authority lines carry observed_at and authority_observed_unix_ms
			// from one wall sample.
			if c.remaining > 0 {
				require.Contains(t, c.want, fmt.Sprintf(`"authority_observed_unix_ms":%d,`, ts(t, c.observed).UnixMilli()))
			}
		})
		for _, s := range []string{c.observed, c.expires} {
			if s == "" {
				continue
			}
			f := events.FormatTimestamp(ts(t, s))
			if i := bytes.IndexByte([]byte(f), '.'); i >= 0 {
				digits[len(f)-i-2] = true
			} else {
				digits[0] = true
			}
		}
	}
	require.Equal(t, map[int]bool{0: true, 3: true, 6: true, 9: true}, digits, "the golden lines must exercise every AutoSi width")
}

// TestGoldenTimestampWidths: observed_at and expires_at use the shortest of
// 0, 3, 6 or 9 fractional digits that is exact — never Go's RFC3339Nano
// trimming — and are normalised to UTC with a literal Z whatever offset the
// server used (docs/protocol.md "Timestamps").
func TestGoldenTimestampWidths(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2026-08-02T12:00:00Z", "2026-08-02T12:00:00Z"},
		{"2026-08-02T12:00:00.5Z", "2026-08-02T12:00:00.500Z"},
		{"2026-08-02T12:00:00.120Z", "2026-08-02T12:00:00.120Z"},
		{"2026-08-02T12:00:00.1234Z", "2026-08-02T12:00:00.123400Z"},
		{"2026-08-02T12:00:00.000001Z", "2026-08-02T12:00:00.000001Z"},
		{"2026-08-02T12:00:00.1234567Z", "2026-08-02T12:00:00.123456700Z"},
		{"2026-08-02T12:00:00.123456789Z", "2026-08-02T12:00:00.123456789Z"},
		{"2026-08-02T14:00:45.5+02:00", "2026-08-02T12:00:45.500Z"},
		{"2026-08-02T07:30:00-04:30", "2026-08-02T12:00:00Z"},
	} {
		// Through the real decode path: a server leader body, then the
		// leader event built from it.
		body := fmt.Sprintf(`{"status":"leader","election_id":"ROOM","leader":{"candidate_id":"a","term":7,"expires_at":%q},"leader_token":"x","renew_after_ms":1}`, c.in)
		cr, err := decodeCampaignResponse([]byte(body))
		require.NoError(t, err)
		var out writeRecorder
		cand := "a"
		observed := ts(t, c.in)
		e := &Emitter{out: &out, clock: wallAt{observed}, kind: events.Election, name: "ROOM", server: "http://127.0.0.1:1", candidate: &cand}
		term, exp := cr.Leader.Term, cr.Leader.ExpiresAt
		e.Emit(events.Lost, Fields{Term: &term, ExpiresAt: &exp, Reason: "lease_not_current"})
		require.Contains(t, string(out.writes[0]), `"expires_at":"`+c.want+`"`, c.in)
		require.Contains(t, string(out.writes[0]), `"observed_at":"`+c.want+`"}`, c.in)
	}
}

// TestGoldenZeroTermAndEscaping: a term of 0 (only a misbehaving server sends
// it) is still printed, as Rust prints it
// (docs/protocol.md "Easy to miss" item 13: pointer fields, not omitempty);
// strings are escaped exactly as serde_json escapes them: < > &, U+2028 and DEL
// raw, control characters short-form or \u00xx lower-case.
func TestGoldenZeroTermAndEscaping(t *testing.T) {
	var out writeRecorder
	name := "a<b>&c\u2028d\x7fe\"f\\g\n\t\b\f\x01\x1f"
	e := &Emitter{out: &out, clock: wallAt{ts(t, "2026-08-02T12:00:00Z")}, kind: events.Lock, name: name, server: "http://127.0.0.1:3000"}
	zero := uint64(0)
	e.Emit(events.Released, Fields{Term: &zero, Reason: ReasonSignal})
	want := "{\"schema_version\":1,\"sequence\":1,\"event\":\"released\",\"kind\":\"lock\",\"name\":\"a<b>&c\u2028d\x7fe\\\"f\\\\g\\n\\t\\b\\f\\u0001\\u001f\"," +
		"\"server\":\"http://127.0.0.1:3000\",\"term\":0,\"reason_code\":\"signal\",\"observed_at\":\"2026-08-02T12:00:00Z\"}\n"
	require.Equal(t, want, string(out.writes[0]))

	// Sequence numbers count every event of the run from 1.
	e.Emit(events.Error, Fields{Reason: ReasonAcquireTimeout})
	require.Contains(t, string(out.writes[1]), `"sequence":2,`)
}
