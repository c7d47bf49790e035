package hold

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Without the redraw, 1 id in 64 begins with '-': among 5000 draws at least one
// would, with a probability of 1 - (63/64)^5000.
func TestNewElectionIDNeverReadsAsAFlag(t *testing.T) {
	for range 5000 {
		id, err := NewElectionID()
		require.NoError(t, err)
		require.Len(t, id, 32)
		require.False(t, strings.HasPrefix(id, "-"), id)
		b, err := base64.RawURLEncoding.Strict().DecodeString(id)
		require.NoError(t, err, id)
		require.Len(t, b, 24)
	}
}
