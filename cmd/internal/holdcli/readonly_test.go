package holdcli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Flags may follow the positional word of the read commands too, as clap
// allows (`election status ROOM --json`).
func TestIntersperseReadCommands(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"octostore", "election", "status", "room", "--json", "--server", "http://h"},
			[]string{"octostore", "election", "status", "--json", "--server", "http://h", "--", "room"}},
		{[]string{"octostore", "lock", "watch", "repo/x", "--request-timeout=3s"},
			[]string{"octostore", "lock", "watch", "--request-timeout=3s", "--", "repo/x"}},
		{[]string{"octostore", "election", "create", "--json"},
			[]string{"octostore", "election", "create", "--json", "--"}},
		{[]string{"octostore", "election", "--help"}, []string{"octostore", "election", "--help"}},
	} {
		require.Equal(t, c.want, intersperse(c.in))
	}
}

// Validation that needs no server: 64 and a message, nothing on stdout.
func TestReadCommandUsage(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"octostore", "election", "create", "extra"}, `unexpected argument "extra"`},
		{nil, []string{"octostore", "election", "status"}, "status needs exactly one <election_id>"},
		{nil, []string{"octostore", "election", "watch", "a", "b"}, "watch needs exactly one <election_id>"},
		{nil, []string{"octostore", "election", "status", "room", "--bogus"}, "flag provided but not defined: -bogus"},
		{nil, []string{"octostore", "election", "status", "room", "--server", "https://h/?q"}, "server URL must not contain a query or fragment"},
		{nil, []string{"octostore", "election", "watch", "room", "--server", "ftp://h"}, "server URL must use http or https"},
		{nil, []string{"octostore", "election", "create", "--request-timeout", "0"}, "timeouts must be greater than zero"},
		{nil, []string{"octostore", "election", "status", "room", "--connect-timeout", "25h"}, "exceeds the 24h maximum"},
		{nil, []string{"octostore", "lock", "status", "n"}, "lock commands require --server or OCTOSTORE_URL"},
		{nil, []string{"octostore", "lock", "watch", "n", "--server", "http://example.com"}, "refusing to send a secret capability over cleartext HTTP"},
		{map[string]string{"OCTOSTORE_URL": "http://127.0.0.1:1"}, []string{"octostore", "lock", "watch", "n"}, "lock commands require OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN"},
		{map[string]string{"OCTOSTORE_URL": "http://127.0.0.1:1", "OCTOSTORE_TOKEN": " "}, []string{"octostore", "lock", "status", "n"}, "bearer token is empty"},
		{map[string]string{"OCTOSTORE_URL": "http://example.invalid", "OCTOSTORE_TOKEN": "t"}, []string{"octostore", "lock", "status", "n", "--allow-insecure-http"}, "refusing to send the bearer token over cleartext http:// to a host other than loopback"},
	} {
		env := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		var out, errb bytes.Buffer
		require.Equal(t, 64, runTest(c.args, env, &out, &errb), c.args)
		require.Contains(t, errb.String(), c.want, c.args)
		require.Empty(t, out.String(), c.args)
	}
}
