package holdcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/local"
)

// The one place a command's authority is chosen (docs/protocol.md "Server
// selection", "Host-local authority"): --server, else $OCTOSTORE_URL, else
// the hosted default for elections. "local" and file:///DIR select the
// host-local authority, etcd:// and etcds:// an etcd cluster (hold/etcd),
// http(s) an OctoStore server. Every command then calls
// the hold.Authority it gets and never asks which one it is.

// target is a resolved, validated --server with the timeouts, before
// anything is opened, so a command line that is wrong exits 64 before any
// file or connection is touched.
type target struct {
	kind hold.Kind
	// raw is the resolved --server / $OCTOSTORE_URL value.
	raw string
	// defaulted: neither named a server, so the hosted default is used (the
	// election hold then hints at --server local when it is unreachable).
	defaulted bool
	local     bool
	// etcd is the normalized etcd:// or etcds:// URL, when one was named.
	etcd string
	// server is the validated HTTP server (not for the local authority);
	// capability says whether a secret travels to it (holds and every lock
	// command), which forbids cleartext to a non-loopback host.
	server                     hold.Server
	capability                 bool
	connect, request, shutdown time.Duration
}

// resolveTarget checks, in upstream's order, the server and then the three
// timeouts. The local authority uses only --shutdown-timeout, but checks all
// three as a server would, so a command line wrong for one authority is
// wrong for both.
func resolveTarget(c *cli.Context, env hold.LookupEnv, kind hold.Kind, capability bool) (target, error) {
	var flag *string
	if c.IsSet("server") {
		s := c.String("server")
		flag = &s
	}
	envURL, _ := env("OCTOSTORE_URL")
	raw, err := hold.ResolveServer(flag, envURL, kind)
	if err != nil {
		return target{}, usage(err.Error())
	}
	t := target{kind: kind, raw: raw, defaulted: hold.ServerDefaulted(flag != nil, envURL), capability: capability}
	switch {
	case local.IsServer(raw):
		t.local = true
	case isEtcd(raw):
		// etcd.Open parses and checks the URL and its files without dialing,
		// so a wrong one exits 64 here, before anything starts.
		if t.etcd, err = etcdServer(raw, env, Transport(c)); err != nil {
			return target{}, failed(err)
		}
	default:
		if t.server, err = hold.ValidateServer(raw, capability, c.Bool("allow-insecure-http")); err != nil {
			return target{}, usage(err.Error())
		}
		// Every lock command sends the bearer token (open); without one it
		// fails there, saying so. To loopback, open checks who serves it.
		if kind == hold.KindLock && hold.TokenConfigured(env) {
			if err := hold.CheckCredentialTransport(t.server, Transport(c)); err != nil {
				return target{}, usage(err.Error())
			}
		}
	}
	connect, _, err1 := durationFlag(c, "connect-timeout", 5*time.Second)
	request, _, err2 := durationFlag(c, "request-timeout", 10*time.Second)
	shutdown, _, err3 := durationFlag(c, "shutdown-timeout", 2*time.Second)
	if err := errors.Join(err1, err2, err3); err != nil {
		return target{}, usage(err.Error())
	}
	if err := hold.ValidateTimeouts(connect, request, shutdown); err != nil {
		return target{}, usage(err.Error())
	}
	t.connect, t.request, t.shutdown = connect, request, shutdown
	return t, nil
}

func isEtcd(raw string) bool {
	scheme, _, ok := strings.Cut(strings.TrimSpace(raw), "://")
	return ok && (strings.EqualFold(scheme, "etcd") || strings.EqualFold(scheme, "etcds") || strings.EqualFold(scheme, "etcd+unix"))
}

// open opens the authority t names for the command's name (c's one
// positional word, if any): the local state directory, whose name rules are
// checked at once; or an HTTP client (after the CA bundle), with, for lock
// commands, the bearer token. The caller must Close it.
func (t target) open(c *cli.Context, env hold.LookupEnv, in io.Reader, stderr io.Writer) (hold.Authority, error) {
	if t.local {
		return openLocal(c, env, t.raw)
	}
	if t.etcd != "" {
		a, err := openEtcd(t.raw, env, Transport(c), stderr)
		if err != nil {
			return nil, failed(err)
		}
		return a, nil
	}
	var ca *string
	if v, ok := env("OCTOSTORE_CA_BUNDLE"); ok {
		ca = &v
	}
	verify := t.verifiesLoopbackPeer(c)
	client, err := hold.NewClient(hold.ClientOptions{Server: t.server, CapabilityBearing: t.capability,
		ConnectTimeout: t.connect, RequestTimeout: t.request, CABundle: ca, VerifyLoopbackPeer: verify})
	if err != nil {
		return nil, usage(err.Error())
	}
	token, err := t.loadToken(env, in, stderr)
	if err == nil && verify {
		err = probeLoopbackPeer(client, t.connect)
	}
	if err != nil {
		client.CloseIdleConnections()
		return nil, err
	}
	a := hold.NewHTTPAuthority(client, token)
	a.DefaultServer = t.defaulted
	return a, nil
}

// loadToken is a lock command's bearer token ("" for other commands),
// printing the loader's warning.
func (t target) loadToken(env hold.LookupEnv, in io.Reader, stderr io.Writer) (string, error) {
	if t.kind != hold.KindLock {
		return "", nil
	}
	token, warning, err := hold.LoadToken(env, in)
	if err != nil {
		return "", usage(err.Error())
	}
	if warning != "" {
		fmt.Fprintf(stderr, "octostore: %s\n", warning)
	}
	return token, nil
}

// verifiesLoopbackPeer: every lock command sends the bearer token, to a
// cleartext loopback server only over connections that root or we serve.
func (t target) verifiesLoopbackPeer(c *cli.Context) bool {
	return t.kind == hold.KindLock && t.server.Loopback && !t.server.HTTPS && !Transport(c).AllowCleartextCredentials
}

// probeLoopbackPeer refuses, with 64 before anything starts, a loopback
// server whose port another user serves.
func probeLoopbackPeer(client *hold.Client, connect time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), connect)
	defer cancel()
	var u *hold.UntrustedListener
	if err := client.ProbeLoopbackPeer(ctx); errors.As(err, &u) {
		return usage(hold.LoopbackCredentialsRefusal("the bearer token", "http://", u, "use https://"))
	}
	return nil
}

func openLocal(c *cli.Context, env hold.LookupEnv, raw string) (hold.Authority, error) {
	store, err := local.Open(raw, env)
	if err != nil {
		return nil, usage(err.Error())
	}
	if c.NArg() == 1 {
		if err := local.ValidateName(c.Args().First()); err != nil {
			store.Close()
			return nil, usage(err.Error())
		}
	}
	return store, nil
}

// failed maps an authority's error to the command's exit: 64 for a usage
// error, else 70 with the diagnostic (an HTTP failure's, secrets redacted),
// control characters escaped.
func failed(err error) error {
	var ee exitError
	var ue *hold.UsageError
	switch {
	case errors.As(err, &ee):
		return ee
	case errors.As(err, &ue):
		return usage(ue.Error())
	}
	return apiFailure(err, "")
}
