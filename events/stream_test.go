package events

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type step struct {
	line  string
	class error // nil: accepted
	msg   string
}

func ok(line string) step           { return step{line: line} }
func bad(line, msg string) step     { return step{line: line, class: ErrInvalid, msg: msg} }
func inDoubt(line, msg string) step { return step{line: line, class: ErrDoubt, msg: msg} }
func elLeader(seq, term int) string {
	return el(seqf(seq) + `,"event":"leader","term":` + strconv.Itoa(term) + `,` + auth(3000))
}
func lkAcquired(seq, term int) string {
	return lk(seqf(seq) + `,"event":"acquired","term":` + strconv.Itoa(term) + `,` + auth(3000))
}
func elEvent(seq int, event string) string { return el(seqf(seq) + `,"event":"` + event + `"`) }
func seqf(seq int) string                  { return `"sequence":` + strconv.Itoa(seq) }

// runSteps feeds every line to one stream and checks each verdict in order.
func runSteps(t *testing.T, s *Stream, steps []step) {
	t.Helper()
	for i, st := range steps {
		_, err := s.Next([]byte(st.line))
		if st.class == nil {
			require.NoError(t, err, "step %d: %s", i, st.line)
			continue
		}
		require.Error(t, err, "step %d: %s", i, st.line)
		requireClass(t, err, st.class, st.msg)
	}
}

func TestStreamNextParse(t *testing.T) {
	w := `,"event":"waiting"`
	tests := []struct {
		name string
		step step
	}{
		{"plain waiting", ok(el(`"sequence":1` + w))},
		{"not json (B4)", bad(`not json`, msgMalformed)},
		{"blank line", bad(``, msgMalformed)},
		{"whitespace only", bad(" \t", msgMalformed)},
		{"array", bad(`[1]`, msgMalformed)},
		{"bare string", bad(`"waiting"`, msgMalformed)},
		{"null", bad(`null`, msgMalformed)},
		{"two objects", bad(el(`"sequence":1`+w)+el(`"sequence":2`+w), msgMalformed)},
		{"trailing garbage", bad(el(`"sequence":1`+w)+` x`, msgMalformed)},
		{"truncated object", bad(strings.TrimSuffix(el(`"sequence":1`+w), "}"), msgMalformed)},
		{"leading and trailing whitespace incl CR", ok(" \t" + el(`"sequence":1`+w) + " \t\r")},
		{"schema_version 2 (B5)", bad(strings.Replace(el(`"sequence":1`+w), `"schema_version":1`, `"schema_version":2`, 1), msgMalformed)},
		{"schema_version string", bad(strings.Replace(el(`"sequence":1`+w), `"schema_version":1`, `"schema_version":"1"`, 1), msgMalformed)},
		{"schema_version 1.0", bad(strings.Replace(el(`"sequence":1`+w), `"schema_version":1`, `"schema_version":1.0`, 1), msgMalformed)},
		{"schema_version null", bad(strings.Replace(el(`"sequence":1`+w), `"schema_version":1`, `"schema_version":null`, 1), msgMalformed)},
		{"schema_version missing", bad(strings.Replace(el(`"sequence":1`+w), `"schema_version":1,`, ``, 1), msgMalformed)},
		{"unknown fields ignored (B8)", ok(el(`"sequence":1` + w + `,"future":{"a":[1,2,{"b":null}]},"retry_after_ms":14210,"reason_code":"follower","x":1.5e3`))},
		{"duplicate key", bad(el(`"sequence":1`+w+`,"sequence":2`), msgMalformed)},
		{"duplicate key via escape", bad(el(`"sequence":1`+w+`,"sequ\u0065nce":2`), msgMalformed)},
		{"duplicate unknown key", bad(el(`"sequence":1`+w+`,"x":1,"x":1`), msgMalformed)},
		{"invalid utf-8", bad(el(`"sequence":1`+w+`,"x":"`+"\xff"+`"`), msgMalformed)},
		// serde_json never writes one (a Rust string cannot hold it); encoding/json
		// read it as U+FFFD.
		{"lone surrogate escape", bad(el(`"sequence":1`+w+`,"x":"\ud800"`), msgMalformed)},
		{"duplicate key in a nested object", bad(el(`"sequence":1`+w+`,"x":{"a":1,"a":2}`), msgMalformed)},
		{"same key in two nested objects", ok(el(`"sequence":1` + w + `,"x":{"a":1},"y":{"a":2}`))},
		{"remaining as string (C5)", bad(el(`"sequence":1`+w+`,"authority_remaining_ms":"3000"`), msgMalformed)},
		{"remaining fraction", bad(el(`"sequence":1`+w+`,"authority_remaining_ms":3000.5`), msgMalformed)},
		{"remaining integral fraction", bad(el(`"sequence":1`+w+`,"authority_remaining_ms":3000.0`), msgMalformed)},
		{"remaining exponent", bad(el(`"sequence":1`+w+`,"authority_remaining_ms":3e3`), msgMalformed)},
		{"remaining negative", bad(el(`"sequence":1`+w+`,"authority_remaining_ms":-1`), msgMalformed)},
		{"remaining bool", bad(el(`"sequence":1`+w+`,"authority_remaining_ms":true`), msgMalformed)},
		{"unix as string", bad(el(`"sequence":1`+w+`,"authority_observed_unix_ms":"1"`), msgMalformed)},
		{"continuous negative", bad(el(`"sequence":1`+w+`,"authority_observed_continuous_ms":-5`), msgMalformed)},
		{"authority nulls are absent", ok(el(`"sequence":1` + w + `,"authority_remaining_ms":null,"authority_observed_unix_ms":null,"authority_observed_continuous_ms":null`))},
		{"huge authority digits still parse", ok(el(`"sequence":1` + w + `,"authority_remaining_ms":123456789012345678901234567890`))},
		{"term as string", bad(el(`"sequence":1`+w+`,"term":"7"`), msgMalformed)},
		{"term negative", bad(el(`"sequence":1`+w+`,"term":-7`), msgMalformed)},
		{"term fraction", bad(el(`"sequence":1`+w+`,"term":7.0`), msgMalformed)},
		{"term null", bad(el(`"sequence":1`+w+`,"term":null`), msgMalformed)},
		{"term beyond uint64", bad(el(`"sequence":1`+w+`,"term":18446744073709551616`), msgMalformed)},
		{"event not a string", bad(el(`"sequence":1,"event":5`), msgMalformed)},
		{"event null", bad(el(`"sequence":1,"event":null`), msgMalformed)},
		{"kind null", bad(`{"schema_version":1,"sequence":1,"event":"waiting","kind":null,"name":"`+testRoom+`","candidate_id":"agent-a"}`, msgMalformed)},
		{"name number", bad(`{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","name":1,"candidate_id":"agent-a"}`, msgMalformed)},
		{"server not a string", bad(`{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","name":"`+testRoom+`","candidate_id":"agent-a","server":false}`, msgMalformed)},
		{"reason_code not a string", bad(el(`"sequence":1`+w+`,"reason_code":1`), msgMalformed)},
		{"candidate_id number", bad(`{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","name":"`+testRoom+`","candidate_id":5}`, msgMalformed)},
		// Type errors outrank the sequence rule: parsing comes first.
		{"malformed beats bad sequence", bad(el(`"sequence":-1`+w+`,"term":"x"`), msgMalformed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, NewStream(electionTarget()), []step{tt.step})
		})
	}
}

func TestStreamNextSequence(t *testing.T) {
	w := `,"event":"waiting"`
	tests := []struct {
		name  string
		steps []step
	}{
		{"missing", []step{bad(el(`"x":1`+w), msgBadSequence)}},
		{"null", []step{bad(el(`"sequence":null`+w), msgBadSequence)}},
		{"string of digits", []step{bad(el(`"sequence":"1"`+w), msgBadSequence)}},
		{"negative", []step{bad(el(`"sequence":-1`+w), msgBadSequence)}},
		{"fraction", []step{bad(el(`"sequence":1.5`+w), msgBadSequence)}},
		{"exponent", []step{bad(el(`"sequence":1e2`+w), msgBadSequence)}},
		{"beyond uint64", []step{bad(el(`"sequence":18446744073709551616`+w), msgBadSequence)}},
		{"uint64 max", []step{ok(el(`"sequence":18446744073709551615` + w))}},
		{"zero first", []step{bad(el(`"sequence":0`+w), msgSequenceStale)}},
		{"first may skip ahead", []step{ok(el(`"sequence":7` + w))}},
		{"gaps accepted (B3)", []step{ok(elEvent(5, Waiting)), ok(elLeader(9, 7)), ok(el(`"sequence":10,"event":"released","term":7`))}},
		{"repeat", []step{ok(elEvent(1, Waiting)), bad(elEvent(1, Waiting), msgSequenceStale)}},
		{"regression", []step{ok(elEvent(4, Waiting)), bad(elEvent(3, Waiting), msgSequenceStale)}},
		{"regression after leader (B2)", []step{ok(elLeader(1, 7)), bad(el(`"sequence":1,"event":"renewed","term":7,`+auth(3000)), msgSequenceStale)}},
		{"rejected line is not recorded", []step{ok(elEvent(1, Waiting)), bad(elEvent(2, "paused"), "unknown hold event 'paused'; refusing to continue work"), ok(elEvent(2, Waiting))}},
		{"sequence checked before target", []step{bad(`{"schema_version":1,"sequence":0,"event":"waiting","kind":"lock","name":"other"}`, msgSequenceStale)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, NewStream(electionTarget()), tt.steps)
		})
	}
}

func TestStreamNextTarget(t *testing.T) {
	tests := []struct {
		name   string
		expect Expect
		step   step
	}{
		{"election ok", electionTarget(), ok(elEvent(1, Waiting))},
		{"lock ok", lockTarget(), ok(lk(`"sequence":1,"event":"waiting"`))},
		{"wrong name (B7)", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), testRoom, "other-room-1234", 1), msgWrongTarget)},
		{"name differs in case", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), testRoom, strings.ToLower(testRoom), 1), msgWrongTarget)},
		{"name with trailing space", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), testRoom, testRoom+" ", 1), msgWrongTarget)},
		{"name missing", electionTarget(), bad(`{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","candidate_id":"agent-a"}`, msgWrongTarget)},
		{"wrong kind", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), `"kind":"election"`, `"kind":"lock"`, 1), msgWrongTarget)},
		{"kind missing", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), `"kind":"election",`, ``, 1), msgWrongTarget)},
		{"lock line for election", electionTarget(), bad(strings.Replace(lk(`"sequence":1,"event":"waiting"`), testLock, testRoom, 1), msgWrongTarget)},
		{"candidate mismatch (B1)", electionTarget(), bad(strings.Replace(elLeader(1, 7), `"candidate_id":"agent-a"`, `"candidate_id":"intruder"`, 1), msgWrongCandidate)},
		{"candidate missing", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), `,"candidate_id":"agent-a"`, ``, 1), msgWrongCandidate)},
		{"candidate null", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), `"candidate_id":"agent-a"`, `"candidate_id":null`, 1), msgWrongCandidate)},
		{"candidate empty", electionTarget(), bad(strings.Replace(elEvent(1, Waiting), `"candidate_id":"agent-a"`, `"candidate_id":""`, 1), msgWrongCandidate)},
		{"lock with candidate (B7)", lockTarget(), bad(lk(`"sequence":1,"event":"waiting","candidate_id":"agent-a"`), msgLockCandidate)},
		{"lock with empty candidate", lockTarget(), ok(lk(`"sequence":1,"event":"waiting","candidate_id":""`))},
		{"lock with null candidate", lockTarget(), ok(lk(`"sequence":1,"event":"waiting","candidate_id":null`))},
		{"target checked before event name", lockTarget(), bad(lk(`"sequence":1,"event":"paused","candidate_id":"x"`), msgLockCandidate)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, NewStream(tt.expect), []step{tt.step})
		})
	}
}

func TestStreamNextEventName(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name   string
		expect Expect
		line   string
		msg    string
	}{
		{"unknown (B6)", electionTarget(), elEvent(1, "paused"), "unknown hold event 'paused'; refusing to continue work"},
		{"case differs", electionTarget(), elEvent(1, "Leader"), "unknown hold event 'Leader'; refusing to continue work"},
		{"missing", electionTarget(), el(`"sequence":1`), "unknown hold event ''; refusing to continue work"},
		{"control characters escaped", electionTarget(), elEvent(1, `a\u001b[2Jb\nc\td\u202e`), `unknown hold event 'a\u{1b}[2Jb\nc\td\u{202e}'; refusing to continue work`},
		{"capped at 64 bytes", electionTarget(), elEvent(1, long), "unknown hold event '" + strings.Repeat("x", 61) + "...'; refusing to continue work"},
		{"cap keeps escapes whole", electionTarget(), elEvent(1, strings.Repeat("y", 58)+`\u0001zzzz`), "unknown hold event '" + strings.Repeat("y", 58) + "...'; refusing to continue work"},
		{"cap keeps runes whole", electionTarget(), elEvent(1, strings.Repeat("y", 60)+"ééé"), "unknown hold event '" + strings.Repeat("y", 60) + "...'; refusing to continue work"},
		{"leader on lock (B16 closed)", lockTarget(), lk(`"sequence":1,"event":"leader","term":7,` + auth(3000)), msgLeaderOnLock},
		{"acquired on election", electionTarget(), el(`"sequence":1,"event":"acquired","term":7,` + auth(3000)), msgAcquiredOnElect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, NewStream(tt.expect), []step{bad(tt.line, tt.msg)})
		})
	}
}

func TestStreamNextTransitions(t *testing.T) {
	renewed := func(seq int, term string) string {
		return el(seqf(seq) + `,"event":"renewed"` + term + `,` + auth(3000))
	}
	tests := []struct {
		name   string
		expect Expect
		steps  []step
	}{
		{"waiting before authority (B12)", electionTarget(), []step{ok(elEvent(1, Waiting)), ok(elEvent(2, Waiting)), ok(el(`"sequence":3,"event":"uncertain","reason_code":"initial_authority_deadline_exceeded"`))}},
		{"waiting after authority (B13)", electionTarget(), []step{ok(elLeader(1, 7)), inDoubt(elEvent(2, Waiting), msgWaitingAfterStart)}},
		{"lock waiting after acquired", lockTarget(), []step{ok(lkAcquired(1, 42)), inDoubt(lk(`"sequence":2,"event":"waiting"`), msgWaitingAfterStart)}},
		{"duplicate leader (B9)", electionTarget(), []step{ok(elLeader(1, 7)), bad(elLeader(2, 7), msgDuplicateStart)}},
		{"duplicate acquired with new term", lockTarget(), []step{ok(lkAcquired(1, 42)), bad(lkAcquired(2, 43), msgDuplicateStart)}},
		{"term zero (B10)", electionTarget(), []step{bad(elLeader(1, 0), msgZeroTerm)}},
		{"term missing (B10)", electionTarget(), []step{bad(el(`"sequence":1,"event":"leader",`+auth(3000)), msgMissingTerm)}},
		{"only remaining present (C2)", lockTarget(), []step{bad(lk(`"sequence":1,"event":"acquired","term":42,"authority_remaining_ms":3000`), msgMissingUnix)}},
		{"remaining missing", lockTarget(), []step{bad(lk(`"sequence":1,"event":"acquired","term":42,"authority_observed_unix_ms":1,"authority_observed_continuous_ms":1`), msgMissingRemaining)}},
		{"remaining null", lockTarget(), []step{bad(lk(`"sequence":1,"event":"acquired","term":42,"authority_remaining_ms":null,"authority_observed_unix_ms":1,"authority_observed_continuous_ms":1`), msgMissingRemaining)}},
		{"continuous missing", lockTarget(), []step{bad(lk(`"sequence":1,"event":"acquired","term":42,"authority_remaining_ms":3000,"authority_observed_unix_ms":1`), msgMissingCont)}},
		{"term checked before authority fields", lockTarget(), []step{bad(lk(`"sequence":1,"event":"acquired"`), msgMissingTerm)}},
		{"rejected leader does not start authority", electionTarget(), []step{bad(elLeader(1, 0), msgZeroTerm), ok(elLeader(2, 7)), ok(renewed(3, `,"term":7`))}},
		{"renewed before authority (B11)", electionTarget(), []step{bad(renewed(1, `,"term":7`), msgRenewedFirst)}},
		{"renewed changed term (B11)", electionTarget(), []step{ok(elLeader(1, 7)), bad(renewed(2, `,"term":8`), msgRenewedTerm)}},
		{"renewed omitted term", electionTarget(), []step{ok(elLeader(1, 7)), bad(renewed(2, ``), msgRenewedTerm)}},
		{"renewed same term", electionTarget(), []step{ok(elLeader(1, 7)), ok(renewed(2, `,"term":7`)), ok(renewed(3, `,"term":7`))}},
		{"renewed without timestamps passes structure (C15)", electionTarget(), []step{ok(elLeader(1, 7)), ok(el(`"sequence":2,"event":"renewed","term":7`))}},
		{"released changed term (B11)", electionTarget(), []step{ok(elLeader(1, 7)), bad(el(`"sequence":2,"event":"released","term":8`), "released event changed the fencing term")}},
		{"lost omitted term", electionTarget(), []step{ok(elLeader(1, 7)), bad(el(`"sequence":2,"event":"lost"`), "lost event changed the fencing term")}},
		{"uncertain changed term", lockTarget(), []step{ok(lkAcquired(1, 42)), bad(lk(`"sequence":2,"event":"uncertain","term":41`), "uncertain event changed the fencing term")}},
		{"released same term", electionTarget(), []step{ok(elLeader(1, 7)), ok(el(`"sequence":2,"event":"released","term":7,"reason_code":"signal"`))}},
		{"released first, any term (B14)", electionTarget(), []step{ok(el(`"sequence":1,"event":"released","term":99`))}},
		{"lost first (B14)", electionTarget(), []step{ok(elEvent(1, Lost))}},
		{"error without term after leader (B15)", electionTarget(), []step{ok(elLeader(1, 7)), ok(el(`"sequence":2,"event":"error","reason_code":"acquire_timeout"`))}},
		{"error after waiting (B15)", electionTarget(), []step{ok(elEvent(1, Waiting)), ok(el(`"sequence":2,"event":"error","reason_code":"acquire_timeout"`))}},
		{"release is terminal (B17)", electionTarget(), []step{ok(elLeader(1, 7)), ok(el(`"sequence":2,"event":"released","term":7`)), bad(elLeader(3, 8), msgAfterTerminal)}},
		{"nothing after terminal before authority", lockTarget(), []step{ok(lk(`"sequence":1,"event":"error","reason_code":"acquire_timeout"`)), bad(lkAcquired(2, 42), msgAfterTerminal)}},
		{"after terminal is checked before parsing", electionTarget(), []step{ok(elEvent(1, Lost)), bad(`not json`, msgAfterTerminal)}},
		{"acquired on lock then released (B16 lock path)", lockTarget(), []step{ok(lkAcquired(1, 42)), ok(lk(`"sequence":2,"event":"released","term":42`))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, NewStream(tt.expect), tt.steps)
		})
	}
}

func TestStreamActiveTerm(t *testing.T) {
	s := NewStream(electionTarget())
	_, active := s.ActiveTerm()
	require.False(t, active)
	require.Zero(t, s.LastSequence())

	_, err := s.Next([]byte(elEvent(3, Waiting)))
	require.NoError(t, err)
	_, active = s.ActiveTerm()
	require.False(t, active)

	_, err = s.Next([]byte(elLeader(5, 0)))
	require.Error(t, err)
	_, active = s.ActiveTerm()
	require.False(t, active, "a rejected leader must not arm a term")
	require.Equal(t, uint64(3), s.LastSequence())

	_, err = s.Next([]byte(elLeader(5, 12)))
	require.NoError(t, err)
	term, active := s.ActiveTerm()
	require.True(t, active)
	require.Equal(t, uint64(12), term)
	require.Equal(t, uint64(5), s.LastSequence())
}

func TestStreamNextEventFields(t *testing.T) {
	tests := []struct {
		name   string
		expect Expect
		line   string
		want   Event
	}{
		{
			name:   "election leader from the protocol example",
			expect: electionTarget(),
			line:   `{"schema_version":1,"sequence":3,"event":"leader","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:45.501234567Z","authority_remaining_ms":23912,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123,"observed_at":"2026-08-02T12:00:15.589012345Z"}`,
			want: Event{
				Sequence: 3, Event: Leader, Kind: Election, Name: testRoom, Server: testServer,
				CandidateID: strPtr(testCandidate), Term: u64Ptr(12),
				Authority: &Authority{
					RemainingMs: 23912, ObservedUnixMs: 1785672015589, ObservedContinuousMs: 99500123,
					RemainingDigits: 5, ObservedUnixDigits: 13, ObservedContinuousDigits: 8,
				},
				AuthorityPresent: AuthorityFields{Remaining: true, ObservedUnix: true, ObservedContinuous: true},
			},
		},
		{
			name:   "lock waiting from the protocol example",
			expect: lockTarget(),
			line:   `{"schema_version":1,"sequence":1,"event":"waiting","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","retry_after_ms":52311,"reason_code":"held","observed_at":"2026-08-02T12:00:00Z"}`,
			want:   Event{Sequence: 1, Event: Waiting, Kind: Lock, Name: testLock, Server: "http://127.0.0.1:3000", ReasonCode: "held"},
		},
		{
			name:   "partial authority on renewed is reported, not assembled",
			expect: electionTarget(),
			line:   el(`"sequence":1,"event":"lost","term":4,"authority_remaining_ms":1000000000000,"reason_code":"term_changed"`),
			want: Event{
				Sequence: 1, Event: Lost, Kind: Election, Name: testRoom, Server: testServer,
				CandidateID: strPtr(testCandidate), Term: u64Ptr(4), ReasonCode: "term_changed",
				AuthorityPresent: AuthorityFields{Remaining: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewStream(tt.expect).Next([]byte(tt.line))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestEventAuthorityOrDoubt(t *testing.T) {
	s := NewStream(electionTarget())
	_, err := s.Next([]byte(elLeader(1, 7)))
	require.NoError(t, err)

	ev, err := s.Next([]byte(el(`"sequence":2,"event":"renewed","term":7,"authority_remaining_ms":3000`)))
	require.NoError(t, err)
	_, err = ev.AuthorityOrDoubt()
	requireClass(t, err, ErrDoubt, msgRenewedNoDeadline)

	ev, err = s.Next([]byte(el(`"sequence":3,"event":"renewed","term":7,` + auth(2500))))
	require.NoError(t, err)
	a, err := ev.AuthorityOrDoubt()
	require.NoError(t, err)
	require.Equal(t, uint64(2500), a.RemainingMs)
}

func TestEventPredicates(t *testing.T) {
	tests := []struct {
		event           string
		terminal, start bool
	}{
		{Waiting, false, false},
		{Leader, false, true},
		{Acquired, false, true},
		{Renewed, false, false},
		{Released, true, false},
		{Lost, true, false},
		{Uncertain, true, false},
		{Error, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			ev := Event{Event: tt.event}
			require.Equal(t, tt.terminal, ev.Terminal())
			require.Equal(t, tt.start, ev.StartsAuthority())
		})
	}
}

func strPtr(s string) *string { return &s }
func u64Ptr(v uint64) *uint64 { return &v }
