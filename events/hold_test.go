package events

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFormatTimestampAutoSi(t *testing.T) {
	base := time.Date(2026, 8, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ns   int
		want string
	}{
		{0, "2026-08-02T12:00:00Z"},
		{500_000_000, "2026-08-02T12:00:00.500Z"},
		{123_000_000, "2026-08-02T12:00:00.123Z"},
		{123_456_000, "2026-08-02T12:00:00.123456Z"},
		{123_456_789, "2026-08-02T12:00:00.123456789Z"},
		{1, "2026-08-02T12:00:00.000000001Z"},
		{1_000, "2026-08-02T12:00:00.000001Z"},
	} {
		require.Equal(t, c.want, FormatTimestamp(base.Add(time.Duration(c.ns))))
	}
	// Any zone is written in UTC with a literal Z.
	cest := time.FixedZone("CEST", 2*3600)
	require.Equal(t, "2026-08-02T12:00:00Z", FormatTimestamp(time.Date(2026, 8, 2, 14, 0, 0, 0, cest)))
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

// Upstream's example event lines, byte for byte (their shapes:
// docs/protocol.md "Example lines").
func TestHoldEventGolden(t *testing.T) {
	room := "g15BTc54MStBoX-momDJm6uBhJQKKtqQ"
	elec := func(seq uint64, ev string) Event {
		return Event{Sequence: seq, Event: ev, Kind: Election, Name: room, Server: "https://api.octostore.io", CandidateID: ptr("agent-a")}
	}
	lock := func(seq uint64, ev string) Event {
		return Event{Sequence: seq, Event: ev, Kind: Lock, Name: "repo/octostore/issue-1842", Server: "http://127.0.0.1:3000"}
	}
	leader := elec(3, Leader)
	leader.Term = ptr(uint64(12))
	leader.Authority = ptr(NewAuthority(23912, 1785672015589, 99500123))
	waiting := elec(1, Waiting)
	waiting.ReasonCode = "follower"
	lost := elec(5, Lost)
	lost.Term, lost.ReasonCode = ptr(uint64(12)), "lease_not_current"
	released := lock(5, Released)
	released.Term, released.ReasonCode = ptr(uint64(42)), "signal"
	acquired := lock(3, Acquired)
	acquired.Term = ptr(uint64(42))
	acquired.Authority = ptr(NewAuthority(23930, 1785672015589, 99500123))
	lockErr := lock(3, Error)
	lockErr.ReasonCode = "acquire_timeout"

	cases := []struct {
		ev   HoldEvent
		want string
	}{
		{HoldEvent{Event: waiting, RetryAfterMs: ptr(uint64(14210)), ObservedAt: ts("2026-08-02T12:00:00.118204711Z")},
			`{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","retry_after_ms":14210,"reason_code":"follower","observed_at":"2026-08-02T12:00:00.118204711Z"}`},
		{HoldEvent{Event: leader, ExpiresAt: ptr(ts("2026-08-02T12:00:45.501234567Z")), ObservedAt: ts("2026-08-02T12:00:15.589012345Z")},
			`{"schema_version":1,"sequence":3,"event":"leader","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:45.501234567Z","authority_remaining_ms":23912,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123,"observed_at":"2026-08-02T12:00:15.589012345Z"}`},
		{HoldEvent{Event: lost, ExpiresAt: ptr(ts("2026-08-02T12:00:59.014310772Z")), ObservedAt: ts("2026-08-02T12:00:43.210Z")},
			`{"schema_version":1,"sequence":5,"event":"lost","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:59.014310772Z","reason_code":"lease_not_current","observed_at":"2026-08-02T12:00:43.210Z"}`},
		{HoldEvent{Event: acquired, ExpiresAt: ptr(ts("2026-08-02T12:02:15.600000123Z")), ObservedAt: ts("2026-08-02T12:00:15.589012345Z")},
			`{"schema_version":1,"sequence":3,"event":"acquired","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"expires_at":"2026-08-02T12:02:15.600000123Z","authority_remaining_ms":23930,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123,"observed_at":"2026-08-02T12:00:15.589012345Z"}`},
		{HoldEvent{Event: released, ObservedAt: ts("2026-08-02T12:00:00Z")},
			`{"schema_version":1,"sequence":5,"event":"released","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","term":42,"reason_code":"signal","observed_at":"2026-08-02T12:00:00Z"}`},
		{HoldEvent{Event: lockErr, ObservedAt: ts("2026-08-02T12:00:00.5Z")},
			`{"schema_version":1,"sequence":3,"event":"error","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","reason_code":"acquire_timeout","observed_at":"2026-08-02T12:00:00.500Z"}`},
	}
	for _, c := range cases {
		require.Equal(t, c.want+"\n", string(c.ev.Encode()))
	}
}

// What a hold encodes, the supervisor's validator accepts unchanged: one schema.
func TestHoldEventRoundTrip(t *testing.T) {
	cand := "agent-a"
	ev := HoldEvent{Event: Event{Sequence: 1, Event: Leader, Kind: Election, Name: "room <&>", Server: "http://127.0.0.1:1",
		CandidateID: &cand, Term: ptr(uint64(7)), Authority: ptr(NewAuthority(5000, 1785672015589, 99500123))},
		ExpiresAt: ptr(ts("2026-08-02T12:00:45Z")), ObservedAt: ts("2026-08-02T12:00:15.5Z")}
	s := NewStream(Expect{Kind: Election, Name: "room <&>", Candidate: cand})
	line := ev.Encode()
	got, err := s.Next(line[:len(line)-1])
	require.NoError(t, err)
	require.Equal(t, ev.Sequence, got.Sequence)
	require.Equal(t, *ev.Term, *got.Term)
	require.Equal(t, ev.Authority.RemainingMs, got.Authority.RemainingMs)
	require.Equal(t, ev.Name, got.Name)
	require.Contains(t, string(line), `"name":"room <&>"`, "no HTML escaping, as serde_json")
}
