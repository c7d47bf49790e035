package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/local"
)

// HoldArg is the hidden argv[1] that makes this binary run the octostore hold
// client: the embedded hold is this same binary re-executed, so one binary is
// all a user installs, and the hold still runs as a separate, contained process
// whose events pass the same validation as any other hold's.
const HoldArg = "__octostore-hold"

// embeddedFlags configure the embedded hold. They are refused with an explicit
// "-- <hold command>", whose own flags are the place for them.
func embeddedFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: "embedded hold: the authority: an OctoStore URL, \"local\" (this host, no server) or file:///dir (a shared directory); default as for octostore: --server, else $OCTOSTORE_URL, else the hosted authority for elections"},
		&cli.UintFlag{Name: "ttl", Usage: "embedded hold: lease TTL in seconds (elections 5-300, default 30; locks 1-3600, default 120)"},
		&cli.StringFlag{Name: "acquire-timeout", Usage: "embedded hold: give up acquiring after this long (exit 11); default: wait forever"},
		&cli.BoolFlag{Name: "allow-insecure-http", Usage: "embedded hold: allow a non-loopback http:// server (development only)"},
	}
}

// embeddedHold returns the argv of our own hold for `<kind> <name> <candidate>`
// with no "--" part, after checking its flags as the hold itself would, so a
// mistake exits 64 here, before anything starts, and the identity of its
// authority (hostGuard's key). For the host-local authority it also opens the
// name's interlock file (Config.Interlock) in the authority's directory, so
// that every user sharing a file:/// directory shares it too.
func embeddedHold(c *cli.Context, kind, name, candidate string, env []string) (argv []string, authority string, interlock *os.File, err error) {
	argv, server, err := embeddedArgv(c, kind, name, candidate, env)
	if err != nil || !local.IsServer(server) {
		return argv, server, nil, err
	}
	store, err := local.Open(server, lookupIn(env))
	if err != nil {
		return nil, "", nil, usageError{err.Error()}
	}
	defer store.Close()
	hk := holdKind(kind)
	if err := store.CheckName(hk, name); err != nil {
		return nil, "", nil, usageError{err.Error()}
	}
	interlock, err = store.OpenInterlock(hk, name)
	if err != nil {
		return nil, "", nil, usageError{err.Error()}
	}
	return argv, store.Identity(), interlock, nil
}

// hostGuard opens, in the user's private state directory, what keeps a second
// worker of one authority and name from starting on this host while an
// earlier one may live: the name's survivor record (Config.Survivors) and,
// unless the local authority already gave one, its interlock. authority is an
// identity: the local directory's file URL, a normalised server URL, or
// local.ExplicitHoldAuthority.
func hostGuard(authority string, kind hold.Kind, name string, needInterlock bool, env []string) (*local.SurvivorRecord, *os.File, error) {
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

func embeddedArgv(c *cli.Context, kind, name, candidate string, env []string) ([]string, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", usageError{"cannot find this program to run the embedded hold: " + err.Error()}
	}
	hk := holdKind(kind)
	argv := []string{self, HoldArg, kind, "hold", "--json"}
	if kind == "election" {
		if err := hold.ValidateCandidate(candidate); err != nil {
			return nil, "", usageError{err.Error()}
		}
		argv = append(argv, "--candidate", candidate)
	}
	if c.IsSet("ttl") {
		ttl := c.Uint("ttl")
		if ttl > 1<<32-1 {
			return nil, "", usageError{"--ttl is out of range"}
		}
		if err := hold.ValidateTTL(hk, uint32(ttl)); err != nil {
			return nil, "", usageError{err.Error()}
		}
		argv = append(argv, "--ttl", strconv.FormatUint(uint64(ttl), 10))
	}
	if c.IsSet("acquire-timeout") {
		v := c.String("acquire-timeout")
		if _, err := hold.ParseDuration(v); err != nil {
			return nil, "", usageError{err.Error()}
		}
		argv = append(argv, "--acquire-timeout", v)
	}
	var flag *string
	if c.IsSet("server") {
		s := c.String("server")
		flag = &s
	}
	envURL, _ := envValue(env, "OCTOSTORE_URL")
	server, err := hold.ResolveServer(flag, envURL, hk)
	if err != nil {
		return nil, "", usageError{err.Error()}
	}
	// A defaulted server stays unnamed, so the hold knows it chose the hosted
	// default (and can hint at --server local when that is unreachable); it
	// resolves the same default from the same environment.
	if !hold.ServerDefaulted(flag != nil, envURL) {
		argv = append(argv, "--server", server)
	}
	if !local.IsServer(server) {
		// The normalised URL is the authority's identity (hostGuard).
		if server, err = checkServer(server, c.Bool("allow-insecure-http")); err != nil {
			return nil, "", err
		}
	}
	if c.Bool("allow-insecure-http") {
		argv = append(argv, "--allow-insecure-http")
	}
	// "--" keeps a name that starts with '-' a positional word.
	return append(argv, "--", name), server, nil
}

// checkServer validates an http(s) authority URL the way the hold will and
// returns it normalised.
func checkServer(server string, allowInsecure bool) (string, error) {
	s, err := hold.ValidateServer(server, true, allowInsecure)
	if err != nil {
		return "", usageError{err.Error()}
	}
	return s.URL, nil
}

// embeddedOnly names the embedded-hold flags given together with "-- <hold command>".
func embeddedOnly(c *cli.Context) error {
	var set []string
	for _, f := range []string{"server", "ttl", "acquire-timeout", "allow-insecure-http"} {
		if c.IsSet(f) {
			set = append(set, "--"+f)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return usageError{fmt.Sprintf("%s configure the embedded hold; with \"-- <hold command>\" give them to that command instead", strings.Join(set, ", "))}
}
