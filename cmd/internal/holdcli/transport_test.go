package holdcli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// flagsIn are the flags a message names ("--allow-insecure-http").
var flagsIn = regexp.MustCompile(`--[a-z][a-z-]*[a-z]`)

// Every command that talks to an authority takes the transport flags, and its
// cleartext refusal names only flags that the command itself takes: given
// them, the command gets past the refusal to the check that follows it, the
// timeouts (issue 35: election create refused --allow-insecure-http while its
// own refusal told the user to pass it).
func TestTransportFlagsOnEveryAuthorityCommand(t *testing.T) {
	vars := map[string]string{"OCTOSTORE_TOKEN": "t"}
	env := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, c := range []struct {
		cmd    []string
		server string
	}{
		{[]string{"election", "create"}, "etcd://10.1.2.3:2379"},
		{[]string{"election", "hold", "room", "--candidate", "a"}, "etcd://10.1.2.3:2379"},
		{[]string{"election", "status", "room"}, "etcd://10.1.2.3:2379"},
		{[]string{"election", "watch", "room"}, "etcd://10.1.2.3:2379"},
		{[]string{"lock", "hold", "n"}, "etcd://10.1.2.3:2379"},
		{[]string{"lock", "status", "n"}, "etcd://10.1.2.3:2379"},
		{[]string{"lock", "watch", "n"}, "etcd://10.1.2.3:2379"},
		// Over HTTP only the commands that carry a capability refuse
		// cleartext; election create, status and watch carry none.
		{[]string{"election", "hold", "room", "--candidate", "a"}, "http://10.1.2.3:8080"},
		{[]string{"lock", "hold", "n"}, "http://10.1.2.3:8080"},
		{[]string{"lock", "status", "n"}, "http://10.1.2.3:8080"},
		{[]string{"lock", "watch", "n"}, "http://10.1.2.3:8080"},
	} {
		args := append(append([]string{"octostore"}, c.cmd...), "--server", c.server)
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			// Invalid timeouts, checked after the server: a command that
			// gets past every refusal stops there, before any request.
			timeouts := []string{"--connect-timeout", "1s", "--request-timeout", "0", "--shutdown-timeout", "1s"}
			var out, errb bytes.Buffer
			require.Equal(t, 64, runTest(append(args, timeouts...), env, &out, &errb))
			require.Contains(t, errb.String(), "refusing")
			// A refusal may follow another (cleartext to another host, then
			// credentials in cleartext): each names its own flag.
			for strings.Contains(errb.String(), "refusing") {
				named := flagsIn.FindAllString(errb.String(), -1)
				require.NotEmpty(t, named, errb.String())
				require.NotSubset(t, args, named, "a refusal names a flag already given")
				args = append(args, named...)
				out.Reset()
				errb.Reset()
				require.Equal(t, 64, runTest(append(args, timeouts...), env, &out, &errb), args)
			}
			require.Equal(t, "octostore: timeouts must be greater than zero\n", errb.String(), args)
			require.Empty(t, out.String())
		})
	}
}

// An unknown flag exits 64 and prints the usage of the command it was given
// to: one line for a command, one for each command below a group or the
// program (issue 35).
func TestUnknownFlagPrintsItsUsage(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	electionLines := []string{
		"octostore election create [flags]",
		"octostore election hold [flags] <election_id>",
		"octostore election status [flags] <election_id>",
		"octostore election watch [flags] <election_id>",
	}
	lockLines := []string{
		"octostore lock hold [flags] <name>",
		"octostore lock status [flags] <name>",
		"octostore lock watch [flags] <name>",
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"election", "create", "--bogus"}, electionLines[0:1]},
		{[]string{"election", "hold", "room", "--candidate", "a", "--bogus"}, electionLines[1:2]},
		{[]string{"election", "status", "room", "--bogus"}, electionLines[2:3]},
		{[]string{"election", "watch", "room", "--bogus"}, electionLines[3:4]},
		{[]string{"lock", "hold", "n", "--bogus"}, lockLines[0:1]},
		{[]string{"lock", "status", "n", "--bogus"}, lockLines[1:2]},
		{[]string{"lock", "watch", "n", "--bogus"}, lockLines[2:3]},
		{[]string{"serve", "--bogus"}, []string{"octostore serve"}},
		{[]string{"election", "--bogus"}, electionLines},
		{[]string{"lock", "--bogus"}, lockLines},
		{[]string{"--bogus"}, append(append(append([]string{}, electionLines...), lockLines...), "octostore serve")},
	} {
		args := append([]string{"octostore"}, c.args...)
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, 64, runTest(args, env, &out, &errb))
			want := "octostore: flag provided but not defined: -bogus\nusage: " + strings.Join(c.want, "\n       ") + "\n"
			require.Equal(t, want, errb.String())
			require.Empty(t, out.String())
		})
	}
}
