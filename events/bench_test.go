package events

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRenewedLine is the supervisor's work for one renewal: the hold's
// line is validated and the accepted event re-encoded. Its allocations are the
// garbage a long hold accumulates between collections (make bench's renewals
// table shows the same in resident memory).
func BenchmarkRenewedLine(b *testing.B) {
	lines := make([][]byte, b.N+1)
	lines[0] = []byte(elLeader(1, 7))
	for i := 1; i <= b.N; i++ {
		lines[i] = []byte(el(seqf(i+1) + `,"event":"renewed","term":7,` + auth(3000)))
	}
	s := NewStream(electionTarget())
	_, err := s.Next(lines[0])
	require.NoError(b, err)
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for _, line := range lines[1:] {
		ev, err := s.Next(line)
		if err != nil {
			b.Fatal(err)
		}
		out = LineFor(ev).Append(out[:0])
	}
}

// A renewal's line is written into the buffer of the line before it, by the
// hold (HoldEvent, through hold.Emitter) and by the supervisor (Line): a long
// hold's heap must not grow by a line a renewal.
func TestAppendReusesTheBuffer(t *testing.T) {
	term, exp, retry := uint64(7), time.Date(2026, 12, 3, 23, 0, 0, 123_000_000, time.UTC), uint64(250)
	candidate, code := "agent-a", 3
	auth := NewAuthority(3000, 1_790_000_000_000, 12_345)
	hold := HoldEvent{Event: Event{Sequence: 9, Event: Renewed, Kind: Election, Name: "room", Server: "local",
		CandidateID: &candidate, Term: &term, FencingKey: "k", ReasonCode: "r", Authority: &auth},
		ExpiresAt: &exp, RetryAfterMs: &retry, ObservedAt: exp}
	line := Line{Sequence: 9, Event: Renewed, Kind: Election, Name: "room", CandidateID: &candidate, Term: &term,
		ReasonCode: "r", WorkerExitCode: &code, Containment: &Containment{Backend: "cgroup", ProvenEmpty: true, Killed: 2, DurationMs: 4, Limit: "l"}}
	for name, enc := range map[string]func([]byte) []byte{"hold": hold.Append, "supervisor": line.Append} {
		b := enc(nil)
		want := string(b)
		require.Zero(t, testing.AllocsPerRun(100, func() { b = enc(b[:0]) }), name)
		require.Equal(t, want, string(b), name)
	}
}
