package proctest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUntil(t *testing.T) {
	calls := 0
	require.True(t, Until(time.Minute, func() bool { calls++; return calls == 3 }))
	require.Equal(t, 3, calls, "cond is looked at until it holds, and no more")

	began := time.Now()
	require.False(t, Until(30*time.Millisecond, func() bool { return false }))
	require.GreaterOrEqual(t, time.Since(began), 30*time.Millisecond, "a miss is reported only once the timeout passed")

	calls = 0
	require.True(t, Until(0, func() bool { calls++; return true }), "a condition that already holds needs no time")
	require.Equal(t, 1, calls)
}
