package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The three positional words are taken literally even when they start with '-'.
func TestLiteralPositionals(t *testing.T) {
	in := []string{"octostore-supervisor", "election", "--term-grace", "2s", "-room", "agent", "/w", "--", "hold", "--json"}
	require.Equal(t, []string{"octostore-supervisor", "election", "--term-grace", "2s", "--", "-room", "agent", "/w", "--", "hold", "--json"}, literalPositionals(in))
	lock := []string{"octostore-supervisor", "lock", "-name", "-", "/w", "--", "hold"}
	require.Equal(t, []string{"octostore-supervisor", "lock", "--", "-name", "-", "/w", "--", "hold"}, literalPositionals(lock))
	short := []string{"octostore-supervisor", "election", "room", "--", "hold"}
	require.Equal(t, short, literalPositionals(short))
}
