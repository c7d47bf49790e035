package events

import (
	"testing"

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
	b.ReportAllocs()
	b.ResetTimer()
	for _, line := range lines[1:] {
		ev, err := s.Next(line)
		if err != nil {
			b.Fatal(err)
		}
		_ = LineFor(ev).Encode()
	}
}
