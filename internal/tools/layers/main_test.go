package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestViolation(t *testing.T) {
	for _, c := range []struct {
		from, to string
		bad      bool
	}{
		{"hold/local", "platform/procid", false},
		{"contain", "internal/helperimage", false},
		{"cmd/internal/holdroot", "contain", false},
		{"hold/etcd", "hold", false},
		{"internal/testkit/proctest", "platform", false},
		{"internal/tools/bundle", "internal/helperimage", false},
		{"hold/local", "contain", true},             // upward
		{"platform/survivor", "hold", true},         // upward
		{"internal/helperimage", "platform", false}, // same layer
		{"contain", "internal/testkit/proctest", true},
		{"cmd/octostore", "testbin/fakehold", true},
		{"contain", "internal/tools/funclen", true},
		{"newfolder/x", "events", true}, // unplaced importer
		{"contain", "newfolder/x", true},
	} {
		require.Equal(t, c.bad, violation(c.from, c.to) != "", "%s -> %s: %q", c.from, c.to, violation(c.from, c.to))
	}
}

// TestModuleIsLayered runs the check on this module for the host's system:
// the rule make vet enforces holds on the tree as it is.
func TestModuleIsLayered(t *testing.T) {
	edges, err := imports("linux")
	require.NoError(t, err)
	require.NotEmpty(t, edges)
	for _, e := range edges {
		require.Empty(t, violation(e[0], e[1]), "%s -> %s", e[0], e[1])
	}
}
