package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/cmd/internal/holdcli"
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
	require.Contains(t, out.String(), "octostore-supervisor election [flags] <election-id>")
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
			// Every form: the error belongs to no one command.
			require.Contains(t, errb.String(), "\nusage: octostore-supervisor election [flags] ", c.args)
			require.Contains(t, errb.String(), "\n       octostore-supervisor run [flags] -- <command>", c.args)
		}
	}
}

// Every command that talks to an authority takes the transport flags, from
// octostore's one definition, and its cleartext refusal names only flags the
// command itself takes: given them, it gets past the refusal to the check
// that follows, the etcd client certificate's (issue 35).
func TestTransportFlagsOnEveryAuthorityCommand(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	env := []string{"OCTOSTORE_ETCD_CERT=/nonexistent"}
	app := newApp(env, nil, nil, new(int))
	// --server's usage says what it means to each command; the rest of
	// the definition is the same everywhere.
	transport := holdcli.TransportFlags("")
	for _, cmd := range [][]string{
		{"election", "--server", "etcd://10.1.2.3:2379", "R", "a", self},
		{"lock", "--server", "etcd://10.1.2.3:2379", "R", "-", self},
		{"doctor", "--server", "etcd://10.1.2.3:2379"},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			for _, f := range transport {
				got := flagNamed(t, app.Command(cmd[0]).Flags, f.Names()[0])
				if f.Names()[0] != "server" {
					require.Equal(t, f, got)
				}
			}
			var out, errb bytes.Buffer
			args := append([]string{"octostore-supervisor"}, cmd...)
			require.Equal(t, 64, run(args, env, &out, &errb))
			require.Contains(t, errb.String(), "refusing cleartext etcd://")
			named := regexp.MustCompile(`--[a-z][a-z-]*[a-z]`).FindAllString(errb.String(), -1)
			require.NotEmpty(t, named, errb.String())

			args = slices.Insert(args, 2, named...)
			out.Reset()
			errb.Reset()
			require.Equal(t, 64, run(args, env, &out, &errb), args)
			require.Equal(t, "octostore-supervisor: OCTOSTORE_ETCD_CERT/OCTOSTORE_ETCD_KEY need an etcds:// server URL (TLS)\n", errb.String(), args)
			require.Empty(t, out.String())
		})
	}
}

// flagNamed is the flag called name among flags.
func flagNamed(t *testing.T, flags []cli.Flag, name string) cli.Flag {
	t.Helper()
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	require.Failf(t, "flag not defined", "--%s", name)
	return nil
}

// An unknown flag exits 64 and prints the usage of the command it was given
// to; given to the program, the usage of every command (issue 35: doctor's
// named election|lock).
func TestUnknownFlagPrintsItsUsage(t *testing.T) {
	lines := []string{
		"octostore-supervisor election [flags] <election-id> <candidate-id> <worker-program> [-- <hold command ...>]",
		"octostore-supervisor lock [flags] <lock-name> - <worker-program> [-- <hold command ...>]",
		"octostore-supervisor run [flags] -- <command> [args...]",
		"octostore-supervisor doctor [flags]",
		"octostore-supervisor sweep [flags]",
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"election", "--bogus"}, lines[0:1]},
		{[]string{"lock", "--bogus", "R", "-", "./w"}, lines[1:2]},
		{[]string{"run", "--bogus", "--", "true"}, lines[2:3]},
		{[]string{"doctor", "--bogus"}, lines[3:4]},
		{[]string{"sweep", "--bogus"}, lines[4:5]},
		{[]string{"--bogus"}, lines},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, 64, run(append([]string{"octostore-supervisor"}, c.args...), nil, &out, &errb))
			want := "octostore-supervisor: flag provided but not defined: -bogus\nusage: " + strings.Join(c.want, "\n       ") + "\n"
			require.Equal(t, want, errb.String())
			require.Empty(t, out.String())
		})
	}
}
