package holdcli

import (
	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
)

// TransportFlags are the flags that choose a command's authority and how it
// may be reached: --server, --allow-insecure-http and
// --allow-cleartext-credentials. Every command that
// talks to an authority takes them from here - octostore's election and lock
// commands, and octostore-supervisor's election and lock (the embedded hold)
// and doctor - because the cleartext refusals (hold.ValidateServer,
// hold/etcd) tell the user to pass --allow-insecure-http: a command defining
// its own set once refused the flag its own refusal named.
// serverUsage says what --server means to the command: which authorities it
// takes and its default.
func TransportFlags(serverUsage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: serverUsage},
		&cli.BoolFlag{Name: "allow-insecure-http", Usage: "allow cleartext (http://, etcd://) to a non-loopback authority (development only)"},
		&cli.BoolFlag{Name: "allow-cleartext-credentials", Usage: "allow credentials (a bearer token, etcd's user:password) over cleartext http:// or etcd://, loopback included, where any local user can listen on a free port"},
	}
}

// Transport is what c's transport flags allow.
func Transport(c *cli.Context) hold.Transport {
	return hold.Transport{AllowInsecureHTTP: c.Bool("allow-insecure-http"), AllowCleartextCredentials: c.Bool("allow-cleartext-credentials")}
}

// clientFlags are the transport flags of octostore's commands and the
// timeouts of its client, which every one of them takes too: the timeouts
// are checked on every authority, so a command line wrong for one is wrong
// for all (resolveTarget).
func clientFlags(kind hold.Kind) []cli.Flag {
	server := "the authority: an OctoStore server URL, local, file:///DIR or etcd://… (default $OCTOSTORE_URL, else " + hold.DefaultElectionServer + ")"
	if kind == hold.KindLock {
		server = "the authority: an OctoStore server URL, local, file:///DIR or etcd://… (or $OCTOSTORE_URL; required for locks)"
	}
	return append(TransportFlags(server),
		&cli.StringFlag{Name: "connect-timeout", Value: "5s", Usage: "bound connecting to an OctoStore server"},
		&cli.StringFlag{Name: "request-timeout", Value: "10s", Usage: "bound each request to an OctoStore server, its body included"},
		&cli.StringFlag{Name: "shutdown-timeout", Value: "2s", Usage: "bound a hold's release after a signal (at most 2s is used)"},
	)
}
