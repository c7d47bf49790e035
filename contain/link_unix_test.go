//go:build unix

package contain

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// discard is a guardian's socket that takes every request and says nothing.
type discard struct{}

func (discard) Read([]byte) (int, error)    { return 0, io.EOF }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) Close() error                { return nil }

// The guardian's reply to exit is its last word: it ends as it sends it, so
// the reply and the socket's close reach the supervisor together. call must
// return the reply, not "the guardian is gone", which would make the
// supervisor contain a run proven empty a second time and report it
// uncertain. Both are ready before call selects; which one a select takes is
// chance, hence the tries.
func TestCallTakesTheReplyOfAGuardianThatEnds(t *testing.T) {
	for try := range 100 {
		l := newLink()
		l.c = newConn(discard{})
		l.replies <- msg{Op: opExit, Reply: true, ID: 1, Report: &Report{ProvenEmpty: true}}
		close(l.dead)
		r, err := l.call(msg{Op: opExit}, time.Second)
		require.NoError(t, err, "try %d", try)
		require.True(t, r.Report.ProvenEmpty)
	}
}
