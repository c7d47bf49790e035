package systemdvm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionLess(t *testing.T) {
	require.True(t, versionLess("6.1.0-9-amd64", "6.1.0-57-amd64"))
	require.False(t, versionLess("6.1.0-57-amd64", "6.1.0-9-amd64"))
	require.True(t, versionLess("5.10.0-30-amd64", "6.1.0-1-amd64"))
}
