package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/contain"
)

// TestMain lets doctor, run in-process by a test, re-execute this test binary
// as the --private-pids init it probes for, as it re-executes the supervisor.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == contain.PidInitArg {
		os.Exit(contain.PidInitMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// The three positional words are taken literally even when they start with '-'.
func TestLiteralPositionals(t *testing.T) {
	in := []string{"octostore-supervisor", "election", "--term-grace", "2s", "-room", "agent", "/w", "--", "hold", "--json"}
	require.Equal(t, []string{"octostore-supervisor", "election", "--term-grace", "2s", "--", "-room", "agent", "/w", "--", "hold", "--json"}, literalPositionals(in))
	lock := []string{"octostore-supervisor", "lock", "-name", "-", "/w", "--", "hold"}
	require.Equal(t, []string{"octostore-supervisor", "lock", "--", "-name", "-", "/w", "--", "hold"}, literalPositionals(lock))
	short := []string{"octostore-supervisor", "election", "room", "--", "hold"}
	require.Equal(t, short, literalPositionals(short))
}

// Usage text and parser agree (issue 11): --help and every usage error show
// flags after the command, where the parser takes them, and a flag given
// before the command is refused with 64 naming where it goes.
func TestFlagsGoAfterTheCommand(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"octostore-supervisor", "--help"}, nil, &out, &errb))
	require.Contains(t, out.String(), "octostore-supervisor <election|lock> [flags] <expected-name>")
	require.Contains(t, out.String(), "octostore-supervisor run [flags] -- <command>")
	require.NotContains(t, out.String(), "[flags] <election|lock>")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "local", "election", "R", "a", "./w"}, "--server goes after the command, as in: octostore-supervisor election --server …"},
		{[]string{"--containment", "cgroup", "lock", "R", "-", "./w"}, "--containment goes after the command, as in: octostore-supervisor lock --containment …"},
		{[]string{"--timeout=1s", "run", "--", "true"}, "--timeout=1s goes after the command, as in: octostore-supervisor run --timeout=1s …"},
		{[]string{"--bogus", "election"}, "flag provided but not defined: -bogus"},
		// In the usage text's order the same flag parses; the TTL is what is wrong.
		{[]string{"election", "--server", "local", "--ttl", "4", "R", "a", self}, "TTL must be between 5 and 300 seconds"},
	} {
		out.Reset()
		errb.Reset()
		require.Equal(t, 64, run(append([]string{"octostore-supervisor"}, c.args...), nil, &out, &errb), c.args)
		require.Contains(t, errb.String(), c.want, c.args)
		require.Empty(t, out.String())
		if !strings.Contains(c.want, "TTL") {
			require.Contains(t, errb.String(), "\nusage: octostore-supervisor <election|lock> [flags] ", c.args)
		}
		if strings.Contains(c.want, "goes after") {
			require.Contains(t, errb.String(), "\noctostore-supervisor run [flags] -- <command>", c.args)
		}
	}
}
