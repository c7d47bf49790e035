package events

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func intPtr(v int) *int { return &v }

func TestLineEncodeGolden(t *testing.T) {
	tests := []struct {
		name string
		line Line
		want string
	}{
		{
			name: "election with candidate and term",
			line: Line{Sequence: 3, Event: Leader, Kind: Election, Name: testRoom, CandidateID: strPtr(testCandidate), Term: u64Ptr(12)},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":3,"event":"leader","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","candidate_id":"agent-a","term":12}` + "\n",
		},
		{
			name: "lock without candidate or term",
			line: Line{Sequence: 1, Event: Waiting, Kind: Lock, Name: testLock},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":1,"event":"waiting","kind":"lock","name":"repo/octostore/issue-1842"}` + "\n",
		},
		{
			name: "all additive fields",
			line: Line{
				Sequence: 5, Event: Lost, Kind: Lock, Name: testLock, Term: u64Ptr(42),
				ReasonCode: "lease_not_current", WorkerExitCode: intPtr(143),
				Containment: &Containment{Backend: "cgroup", ProvenEmpty: true, Killed: 3, DurationMs: 412},
			},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":5,"event":"lost","kind":"lock","name":"repo/octostore/issue-1842","term":42,"reason_code":"lease_not_current","worker_exit_code":143,"containment":{"backend":"cgroup","proven_empty":true,"killed":3,"duration_ms":412}}` + "\n",
		},
		{
			name: "empty limit keeps the Linux and Windows bytes",
			line: Line{
				Sequence: 4, Event: Released, Kind: Lock, Name: testLock, Term: u64Ptr(9),
				Containment: &Containment{Backend: "job", ProvenEmpty: true, Killed: 2, DurationMs: 30, Limit: ""},
			},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":4,"event":"released","kind":"lock","name":"repo/octostore/issue-1842","term":9,"containment":{"backend":"job","proven_empty":true,"killed":2,"duration_ms":30}}` + "\n",
		},
		{
			name: "macOS limit is written last in containment, escaped like every string",
			line: Line{
				Sequence: 6, Event: Lost, Kind: Election, Name: testRoom, CandidateID: strPtr(testCandidate), Term: u64Ptr(3),
				ReasonCode:  "term_changed",
				Containment: &Containment{Backend: "process-group", ProvenEmpty: true, Killed: 1, DurationMs: 7, Limit: "a process that leaves the group \"unseen\" <b>"},
			},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":6,"event":"lost","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","candidate_id":"agent-a","term":3,"reason_code":"term_changed","containment":{"backend":"process-group","proven_empty":true,"killed":1,"duration_ms":7,"limit":"a process that leaves the group \"unseen\" <b>"}}` + "\n",
		},
		{
			name: "usage and the limit that ended the tree come last, each only when set",
			line: Line{
				Sequence: 7, Event: Released, Kind: Election, Name: testRoom, CandidateID: strPtr(testCandidate), Term: u64Ptr(2),
				WorkerExitCode: intPtr(137),
				Containment:    &Containment{Backend: "cgroup", ProvenEmpty: true, Killed: 0, DurationMs: 3, CPUMicros: 812345, MemoryPeakBytes: 67108864, OOMKills: 2, LimitHit: "memory", Signal: 9},
			},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":7,"event":"released","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","candidate_id":"agent-a","term":2,"worker_exit_code":137,"containment":{"backend":"cgroup","proven_empty":true,"killed":0,"duration_ms":3,"cpu_usec":812345,"memory_peak_bytes":67108864,"oom_kills":2,"limit_hit":"memory","signal":9}}` + "\n",
		},
		{
			name: "a limit hit without usage",
			line: Line{
				Sequence: 8, Event: Released, Kind: Lock, Name: testLock, Term: u64Ptr(2),
				Containment: &Containment{Backend: "job", ProvenEmpty: true, Killed: 4, DurationMs: 5, LimitHit: "pids"},
			},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":8,"event":"released","kind":"lock","name":"repo/octostore/issue-1842","term":2,"containment":{"backend":"job","proven_empty":true,"killed":4,"duration_ms":5,"limit_hit":"pids"}}` + "\n",
		},
		{
			name: "zero values that are present stay present",
			line: Line{
				Sequence: 18446744073709551615, Event: Uncertain, Kind: Election, Name: testRoom, CandidateID: strPtr(""), Term: u64Ptr(0),
				WorkerExitCode: intPtr(-1), Containment: &Containment{},
			},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":18446744073709551615,"event":"uncertain","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","candidate_id":"","term":0,"worker_exit_code":-1,"containment":{"backend":"","proven_empty":false,"killed":0,"duration_ms":0}}` + "\n",
		},
		{
			name: "html characters, quote, newline and non-ASCII",
			line: Line{Sequence: 2, Event: Acquired, Kind: Lock, Name: "a<b>&c\"d\ne/é/日本", Term: u64Ptr(7)},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":2,"event":"acquired","kind":"lock","name":"a<b>&c\"d\ne/é/日本","term":7}` + "\n",
		},
		{
			name: "control characters, DEL, backslash and line separators like serde_json",
			line: Line{Sequence: 1, Event: Error, Kind: Lock, Name: "\t\r\b\f\x01\x1f\x7f\\ \u2028\u2029 \\u2028", ReasonCode: "x\u2028y"},
			want: `{"schema_version":1,"source":"octostore-supervisor","sequence":1,"event":"error","kind":"lock","name":"\t\r\b\f\u0001\u001f` + "\x7f" + `\\ ` + "\u2028\u2029" + ` \\u2028","reason_code":"x` + "\u2028" + `y"}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.line.Encode()
			require.Equal(t, tt.want, string(got))
			require.True(t, json.Valid(got))
		})
	}
}

func TestLineFor(t *testing.T) {
	tests := []struct {
		name   string
		expect Expect
		hold   string
		want   string
	}{
		{
			name:   "election leader drops hold-only fields",
			expect: electionTarget(),
			hold:   `{"schema_version":1,"sequence":3,"event":"leader","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:45.501234567Z","authority_remaining_ms":23912,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123,"observed_at":"2026-08-02T12:00:15.589012345Z"}`,
			want:   `{"schema_version":1,"source":"octostore-supervisor","sequence":3,"event":"leader","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","candidate_id":"agent-a","term":12}` + "\n",
		},
		{
			name:   "election waiting keeps reason_code",
			expect: electionTarget(),
			hold:   `{"schema_version":1,"sequence":1,"event":"waiting","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","server":"https://api.octostore.io","candidate_id":"agent-a","retry_after_ms":14210,"reason_code":"follower","observed_at":"2026-08-02T12:00:00.118204711Z"}`,
			want:   `{"schema_version":1,"source":"octostore-supervisor","sequence":1,"event":"waiting","kind":"election","name":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","candidate_id":"agent-a","reason_code":"follower"}` + "\n",
		},
		{
			name:   "lock with empty candidate omits it",
			expect: lockTarget(),
			hold:   `{"schema_version":1,"sequence":5,"event":"lost","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","candidate_id":"","term":42,"reason_code":"lease_not_current","observed_at":"x"}`,
			want:   `{"schema_version":1,"source":"octostore-supervisor","sequence":5,"event":"lost","kind":"lock","name":"repo/octostore/issue-1842","term":42,"reason_code":"lease_not_current"}` + "\n",
		},
		{
			name:   "lock error without term",
			expect: lockTarget(),
			hold:   `{"schema_version":1,"sequence":3,"event":"error","kind":"lock","name":"repo/octostore/issue-1842","server":"http://127.0.0.1:3000","reason_code":"acquire_timeout","observed_at":"x"}`,
			want:   `{"schema_version":1,"source":"octostore-supervisor","sequence":3,"event":"error","kind":"lock","name":"repo/octostore/issue-1842","reason_code":"acquire_timeout"}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := NewStream(tt.expect).Next([]byte(tt.hold))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(LineFor(ev).Encode()))
		})
	}
}

func TestLineForDoesNotAlias(t *testing.T) {
	ev := Event{Sequence: 1, Event: Leader, Kind: Election, Name: testRoom, CandidateID: strPtr(testCandidate), Term: u64Ptr(7)}
	l := LineFor(ev)
	*ev.Term = 8
	*ev.CandidateID = "intruder"
	require.Equal(t, uint64(7), *l.Term)
	require.Equal(t, testCandidate, *l.CandidateID)
}

// TestQuoteLikeSerde pins the quoting of the strings we print to serde_json's,
// where encoding/json differed: U+2028/U+2029 raw (also beside a backslash,
// which alone is escaped), other characters above U+001F raw, and invalid
// UTF-8 as a raw U+FFFD (serde_json's lossy strings), not as an escape.
func TestQuoteLikeSerde(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{"\u2028", "\"\u2028\""},
		{"\u2029x", "\"\u2029x\""},
		{`\u2028`, `"\\u2028"`},
		{"\\\u2028", "\"\\\\\u2028\""},
		{"\u2027", "\"\u2027\""},
		{"a\xffb", "\"a\ufffdb\""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, string(appendQuoted(nil, tt.in)))
		})
	}
}
