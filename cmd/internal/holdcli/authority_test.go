package holdcli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
)

// Every election and lock command takes an etcd URL and checks it before
// anything starts: cleartext to a non-loopback member is refused naming the
// fix, whether --server or $OCTOSTORE_URL names it, and schemes are
// case-insensitive.
func TestEtcdURLCheckedByEveryCommand(t *testing.T) {
	commands := [][]string{
		{"election", "hold", "room", "--candidate", "a"},
		{"election", "create"},
		{"election", "status", "room"},
		{"election", "watch", "room"},
		{"lock", "hold", "n"},
		{"lock", "status", "n"},
		{"lock", "watch", "n"},
	}
	for _, server := range []string{"etcd://etcd.example:2379", "ETCD://etcd.example:2379/team"} {
		for _, cmd := range commands {
			for _, viaEnv := range []bool{false, true} {
				args := append([]string{"octostore"}, cmd...)
				vars := map[string]string{"OCTOSTORE_TOKEN": "t"}
				if viaEnv {
					vars["OCTOSTORE_URL"] = server
				} else {
					args = append(args, "--server", server)
				}
				env := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
				var out, errb bytes.Buffer
				require.Equal(t, hold.ExitUsage, runTest(args, env, &out, &errb), args)
				require.Equal(t, "octostore: refusing cleartext etcd:// to non-loopback member etcd.example:2379; use etcds:// (TLS), loopback members, or --allow-insecure-http for development\n", errb.String(), args)
				require.Empty(t, out.String(), args)
			}
		}
	}
}

// A --ttl beyond 32 bits says that it is out of range, in the words the
// supervisor's embedded hold has always used, and which range is allowed.
func TestHoldTTLOutOfRange(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"octostore", "election", "hold", "room", "--candidate", "a", "--ttl", "4294967296"}, "octostore: --ttl is out of range: TTL must be between 5 and 300 seconds\n"},
		{[]string{"octostore", "lock", "hold", "n", "--server", "local", "--ttl", "18446744073709551615"}, "octostore: --ttl is out of range: TTL must be between 1 and 3600 seconds\n"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, hold.ExitUsage, runTest(c.args, env, &out, &errb), c.args)
		require.Equal(t, c.want, errb.String())
		require.Empty(t, out.String())
	}
}

// The supervisor's embedded hold validates with HoldFlags from its own flag
// set (the transport flags, ttl, acquire-timeout) and re-executes this client
// with HoldRequest.Args: the client must read that command line back as the
// same request, and refuse what HoldFlags refuses with the same message.
func TestHoldFlagsArgsRoundTrip(t *testing.T) {
	embeddedFlags := append(TransportFlags(""),
		&cli.UintFlag{Name: "ttl"},
		&cli.StringFlag{Name: "acquire-timeout"},
	)
	env := func(k string) (string, bool) {
		if k == "OCTOSTORE_TOKEN" {
			return "t", true
		}
		return "", false
	}
	parse := func(flags []cli.Flag, args []string, f func(*cli.Context) error) error {
		app := &cli.App{Name: "t", Flags: flags, Action: f, ExitErrHandler: func(*cli.Context, error) {}}
		return app.Run(append([]string{"t"}, args...))
	}
	for _, c := range []struct {
		kind      hold.Kind
		candidate string
		flags     []string
		want      string // the refusal; "" accepts
	}{
		{hold.KindElection, "agent-a", nil, ""},
		{hold.KindElection, "agent-a", []string{"--server", "local", "--ttl", "60", "--acquire-timeout", "1500ms"}, ""},
		{hold.KindLock, "", []string{"--server", "http://127.0.0.1:9", "--ttl", "3600"}, ""},
		{hold.KindLock, "", []string{"--server", "http://example.invalid", "--allow-insecure-http"}, "refusing to send the bearer token over cleartext http:// to a host other than loopback"},
		{hold.KindLock, "", []string{"--server", "http://example.invalid", "--allow-insecure-http", "--allow-cleartext-credentials"}, ""},
		{hold.KindElection, "agent-a", []string{"--server", "etcd://127.0.0.1:2379,127.0.0.1:2479/team", "--ttl", "10"}, ""},
		{hold.KindLock, "", []string{"--server", "file:///srv/locks", "--acquire-timeout", "0"}, ""},
		{hold.KindElection, "agent-a", []string{"--ttl", "4"}, "TTL must be between 5 and 300 seconds"},
		{hold.KindElection, "agent@a", nil, "candidate"},
		{hold.KindElection, "agent-a", []string{"--acquire-timeout", "5x"}, "invalid duration '5x'"},
		{hold.KindLock, "", nil, "lock commands require --server or OCTOSTORE_URL"},
		{hold.KindElection, "agent-a", []string{"--server", "http://example.com"}, "refusing to send a secret capability over cleartext HTTP"},
		{hold.KindLock, "", []string{"--server", "etcd://h:2379"}, "refusing cleartext etcd:// to non-loopback member h:2379"},
	} {
		var embedded HoldRequest
		err := parse(embeddedFlags, c.flags, func(ctx *cli.Context) error {
			var err error
			embedded, err = HoldFlags(ctx, c.kind, c.candidate, env)
			return err
		})
		args := append([]string{"octostore"}, embedded.Args("-room")...)
		if c.want != "" {
			require.ErrorContains(t, err, c.want, c.flags)
			// The client refuses the same command line with the same words.
			args = append([]string{"octostore", c.kind.String(), "hold", "room"}, c.flags...)
			if c.kind == hold.KindElection {
				args = append(args, "--candidate", c.candidate)
			}
			var out, errb bytes.Buffer
			require.Equal(t, hold.ExitUsage, runTest(args, env, &out, &errb), args)
			require.Equal(t, "octostore: "+err.Error()+"\n", errb.String(), args)
			continue
		}
		require.NoError(t, err, c.flags)
		var client HoldRequest
		cmd := lockHold(env, nil, nil, nil, nil)
		if c.kind == hold.KindElection {
			cmd = electionHold(env, nil, nil, nil)
		}
		require.NoError(t, parse(cmd.Flags, intersperse(args)[3:], func(ctx *cli.Context) error {
			require.Equal(t, []string{"-room"}, ctx.Args().Slice())
			var err error
			client, err = HoldFlags(ctx, c.kind, ctx.String("candidate"), env)
			return err
		}), args)
		require.Equal(t, embedded.Kind, client.Kind)
		require.Equal(t, embedded.Candidate, client.Candidate)
		require.Equal(t, embedded.TTL, client.TTL)
		require.Equal(t, embedded.AcquireTimeout, client.AcquireTimeout)
		require.Equal(t, embedded.Local, client.Local)
		require.Equal(t, embedded.Server, client.Server)
		require.Equal(t, embedded.ServerURL, client.ServerURL)
		require.Equal(t, embedded.target.defaulted, client.target.defaulted)
		require.Equal(t, 2*time.Second, client.target.shutdown)
	}
}
