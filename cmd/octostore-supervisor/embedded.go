package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/cmd/internal/holdcli"
	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/etcd"
	"github.com/octostore-supervisor/supervisor/hold/local"
	"github.com/octostore-supervisor/supervisor/platform/survivor"
)

// HoldArg is the hidden argv[1] that makes this binary run the octostore hold
// client: the embedded hold is this same binary re-executed, so one binary is
// all a user installs, and the hold still runs as a separate, contained process
// whose events pass the same validation as any other hold's.
const HoldArg = "__octostore-hold"

// embeddedFlags configure the embedded hold. They are refused with an explicit
// "-- <hold command>", whose own flags are the place for them.
func embeddedFlags() []cli.Flag {
	return append(holdcli.TransportFlags("embedded hold: the authority: an OctoStore URL, \"local\" (this host, no server), file:///dir (a shared directory) or etcd://…; default as for octostore: --server, else $OCTOSTORE_URL, else the hosted authority for elections"),
		&cli.UintFlag{Name: "ttl", Usage: "embedded hold: lease TTL in seconds (elections 5-300, default 30; locks 1-3600, default 120)"},
		&cli.StringFlag{Name: "acquire-timeout", Usage: "embedded hold: give up acquiring after this long (exit 11); default: wait forever"},
	)
}

// embeddedHold returns the argv of our own hold for `<kind> <name> <candidate>`
// with no "--" part, after checking its flags with the hold's own validation
// (holdcli.HoldFlags), so a mistake exits 64 here, before anything starts, and
// the identity of its authority (hostGuard's key). For the host-local
// authority it also opens the name's interlock file (Config.Interlock) in the
// authority's directory, so that every user sharing a file:/// directory
// shares it too.
func embeddedHold(c *cli.Context, kind, name, candidate string, env []string) (embedded, error) {
	self, err := os.Executable()
	if err != nil {
		return embedded{}, usageError{"cannot find this program to run the embedded hold: " + err.Error()}
	}
	hk := holdKind(kind)
	req, err := holdcli.HoldFlags(c, hk, candidate, lookupIn(env))
	if err != nil {
		return embedded{}, usageError{err.Error()}
	}
	e := embedded{argv: append([]string{self, HoldArg}, req.Args(name)...), acquireTimeout: req.AcquireTimeout, light: !req.Etcd}
	switch {
	case req.Etcd:
		e.authority, err = etcdIdentity(c, req.Server, env, req.AcquireTimeout)
		return e, err
	case !req.Local:
		srv, err := hold.ValidateServer(req.ServerURL, false, true)
		if err != nil {
			return embedded{}, usageError{err.Error()}
		}
		if err := req.ProbeLoopbackPeer(c, lookupIn(env)); err != nil {
			return embedded{}, usageError{err.Error()}
		}
		e.authority = srv.Origin()
		return e, nil
	}
	store, err := local.Open(req.Server, lookupIn(env))
	if err != nil {
		return embedded{}, usageError{err.Error()}
	}
	defer store.Close()
	if err := store.CheckName(hk, name); err != nil {
		return embedded{}, usageError{err.Error()}
	}
	if e.interlock, err = store.OpenInterlock(hk, name); err != nil {
		return embedded{}, usageError{err.Error()}
	}
	e.authority = store.Identity()
	return e, nil
}

// etcdIdentity asks the etcd cluster raw names for its identity on this host
// (etcd.Authority.Identity: its cluster ID, which no spelling of its
// endpoints changes, and the key prefix). While no member answers it waits,
// as the hold would, saying why once, bounded by --acquire-timeout (exit
// 11): there is no identity to keep this host's runs of the name apart by
// until one does.
func etcdIdentity(c *cli.Context, raw string, env []string, limit *time.Duration) (string, error) {
	a, err := etcd.Open(raw, lookupIn(env), holdcli.Transport(c))
	if err != nil {
		return "", usageError{err.Error()}
	}
	defer a.Close()
	if err := a.ProbeLoopbackPeers(); err != nil {
		return "", usageError{err.Error()}
	}
	var giveUp <-chan time.Time
	if limit != nil {
		t := time.NewTimer(*limit)
		defer t.Stop()
		giveUp = t.C
	}
	said := false
	for {
		id, err := a.Identity(context.Background())
		if err == nil {
			return id, nil
		}
		var ue *hold.UsageError
		if errors.As(err, &ue) {
			return "", usageError{ue.Error()}
		}
		why := fmt.Sprintf("waiting for etcd %s to answer, whose cluster ID names this run's interlock: %v", a.Server(), err)
		if !said {
			fmt.Fprintf(c.App.ErrWriter, "octostore-supervisor: %s\n", hold.TerminalSafe(why))
			said = true
		}
		select {
		case <-time.After(time.Second):
		case <-giveUp:
			return "", cli.Exit("octostore-supervisor: gave up after --acquire-timeout "+c.String("acquire-timeout")+": "+hold.TerminalSafe(why), contain.ExitAcquireTimeout)
		}
	}
}

// embedded is the embedded hold as the supervisor runs it.
type embedded struct {
	argv []string
	// authority is the identity of its authority (hostGuard's key).
	authority string
	// interlock is the local authority's interlock of the name (nil for an
	// OctoStore server).
	interlock *os.File
	// acquireTimeout is --acquire-timeout (nil: wait until a signal).
	acquireTimeout *time.Duration
	// light: its authority needs no etcd client (Config.LightHold).
	light bool
}

// hostGuard opens, in the user's private state directory, what keeps a second
// worker of one authority and name from starting on this host while an
// earlier one may live: the name's survivor record (Config.Survivors) and,
// unless the local authority already gave one, its interlock. authority is an
// identity (local.HostKey): the local directory's real file URL, a server's
// canonical origin, an etcd cluster's ID and prefix, or
// local.ExplicitHoldAuthority.
func hostGuard(authority string, kind hold.Kind, name string, needInterlock bool, env []string) (*survivor.Record, *os.File, error) {
	store, err := local.OpenPrivate(lookupIn(env))
	if err != nil {
		return nil, nil, usageError{"the survivor record and interlock need the private state directory: " + err.Error()}
	}
	rec, interlock, err := store.OpenSupervised(authority, kind, name, needInterlock)
	if err != nil {
		store.Close()
		return nil, nil, usageError{err.Error()}
	}
	return rec, interlock, nil
}

func holdKind(kind string) hold.Kind {
	if kind == "lock" {
		return hold.KindLock
	}
	return hold.KindElection
}

// lookupIn looks a variable up in an environment list (the last one wins, as
// for the process environment).
func lookupIn(env []string) hold.LookupEnv {
	return func(key string) (string, bool) { return envValue(env, key) }
}

// embeddedOnly names the embedded-hold flags given together with "-- <hold command>".
func embeddedOnly(c *cli.Context) error {
	var set []string
	for _, f := range embeddedFlags() {
		if name := f.Names()[0]; c.IsSet(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return usageError{fmt.Sprintf("%s configure the embedded hold; with \"-- <hold command>\" give them to that command instead", strings.Join(set, ", "))}
}
