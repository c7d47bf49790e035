package holdcli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
)

// Flags may follow the election id (upstream's documented form), and an id that
// starts with '-' is still the id.
func TestIntersperse(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"octostore", "election", "hold", "room", "--candidate", "a", "--json"},
			[]string{"octostore", "election", "hold", "--candidate", "a", "--json", "--", "room"}},
		{[]string{"octostore", "election", "hold", "-room_x", "--ttl=5", "--candidate", "a"},
			[]string{"octostore", "election", "hold", "--ttl=5", "--candidate", "a", "--", "-room_x"}},
		{[]string{"octostore", "--version"}, []string{"octostore", "--version"}},
	} {
		require.Equal(t, c.want, intersperse(c.in))
	}
}

// Local validation fails with 64 and upstream's message before any request.
func TestElectionHoldUsage(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"octostore", "election", "hold", "room", "--candidate", "a", "--ttl", "4"}, "TTL must be between 5 and 300 seconds"},
		{[]string{"octostore", "election", "hold", "room", "--candidate", "@a"}, "candidate"},
		{[]string{"octostore", "election", "hold", "room", "--candidate", "a", "--acquire-timeout", "1x"}, "invalid duration"},
		{[]string{"octostore", "election", "hold", "room", "--candidate", "a", "--server", "http://example.com"}, "refusing to send a secret capability over cleartext HTTP"},
		{[]string{"octostore", "election", "hold", "room"}, "candidate"},
		{[]string{"octostore", "serve"}, "serve is not part of this client"},
		{[]string{"octostore", "election", "hold", "room", "--candidate", "a", "--bogus"}, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 64, runTest(c.args, env, &out, &errb), c.args)
		require.Contains(t, errb.String(), c.want)
		require.Empty(t, out.String())
	}
}

// lock hold validates in upstream's order - TTL, acquire timeout, server,
// token - and refuses with 64 before any request.
func TestLockHoldUsage(t *testing.T) {
	loose := looseTokenFile(t)
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"octostore", "lock", "hold", "n", "--ttl", "0"}, "TTL must be between 1 and 3600 seconds"},
		{nil, []string{"octostore", "lock", "hold", "n", "--acquire-timeout", "25h"}, "24h"},
		{nil, []string{"octostore", "lock", "hold", "n"}, "lock commands require --server or OCTOSTORE_URL"},
		{map[string]string{"OCTOSTORE_URL": "http://127.0.0.1:1"}, []string{"octostore", "lock", "hold", "n"}, "lock commands require OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN"},
		{map[string]string{"OCTOSTORE_URL": "http://127.0.0.1:1", "OCTOSTORE_TOKEN_FILE": loose}, []string{"octostore", "lock", "hold", "n"}, looseTokenRefusal},
		{map[string]string{"OCTOSTORE_URL": "http://example.invalid", "OCTOSTORE_TOKEN_FILE": loose}, []string{"octostore", "lock", "hold", "n", "--allow-insecure-http"}, "refusing to send the bearer token over cleartext http:// to a host other than loopback"},
		{nil, []string{"octostore", "lock", "status", "n"}, "lock commands require --server or OCTOSTORE_URL"},
	} {
		env := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		var out, errb bytes.Buffer
		require.Equal(t, 64, runTest(c.args, env, &out, &errb), c.args)
		require.Contains(t, errb.String(), c.want, c.args)
		require.Empty(t, out.String())
	}
}

// A flag before the command is refused with 64 naming where it goes, after
// the command the line names (issue 11); octostore's usage text shows only
// --help and --version before the command.
func TestFlagBeforeTheCommand(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	var out, errb bytes.Buffer
	require.Equal(t, 0, runTest([]string{"octostore", "--help"}, env, &out, &errb))
	require.Contains(t, out.String(), "--version")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"octostore", "--server", "local", "election", "hold", "room", "--candidate", "a"}, "octostore: --server goes after the command, as in: octostore election hold --server …"},
		{[]string{"octostore", "--json", "lock", "hold", "n"}, "octostore: --json goes after the command, as in: octostore lock hold --json …"},
		{[]string{"octostore", "--json", "--server=local", "election", "status", "room"}, "as in: octostore election status --json …"},
		{[]string{"octostore", "--bogus", "election", "hold", "room"}, "flag provided but not defined: -bogus"},
	} {
		out.Reset()
		errb.Reset()
		require.Equal(t, 64, runTest(c.args, env, &out, &errb), c.args)
		require.Contains(t, errb.String(), c.want, c.args)
		require.Empty(t, out.String())
	}
}

// runTest is Main for the tests: version "test", empty stdin.
func runTest(args []string, env hold.LookupEnv, stdout, stderr io.Writer) int {
	return run("test", args, env, strings.NewReader(""), stdout, stderr)
}
