package holdcli

import (
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
)

// HoldRequest is a validated hold command line: what `octostore election
// hold` / `lock hold` runs, and what octostore-supervisor's embedded hold
// re-executes this client with. HoldFlags makes one.
type HoldRequest struct {
	Kind hold.Kind
	// Candidate is the candidate ID (elections only).
	Candidate string
	// TTL is --ttl, or the kind's default.
	TTL time.Duration
	// AcquireTimeout is --acquire-timeout; nil waits until a signal.
	AcquireTimeout *time.Duration
	// Local reports that the host-local authority (package hold/local) was
	// selected; Server is then "local" or the file: URL as given.
	Local bool
	// Server is the resolved --server / $OCTOSTORE_URL value.
	Server string
	// ServerURL is the normalised OctoStore or etcd URL ("" when Local):
	// the authority's identity.
	ServerURL string
	// Etcd reports that an etcd cluster (package hold/etcd) was selected:
	// its client is in no build tagged octostore_noetcd.
	Etcd bool

	target target
	// args are the flags to give this client for the same request.
	args []string
}

// HoldFlags validates the flags of a hold in upstream's order — --ttl,
// --candidate (elections), --acquire-timeout, the server and the timeouts —
// from c, where flags c does not define count as not given (the
// supervisor's embedded hold has no timeout flags). candidate is the
// --candidate value. An error is a usage error (exit 64) whose text is the
// one-line reason.
func HoldFlags(c *cli.Context, kind hold.Kind, candidate string, env hold.LookupEnv) (HoldRequest, error) {
	r := HoldRequest{Kind: kind, args: []string{kind.String(), "hold", "--json"}}
	ttl, err := ttlFlag(c, kind)
	if err != nil {
		return HoldRequest{}, err
	}
	r.TTL = time.Duration(ttl) * time.Second
	if kind == hold.KindElection {
		if err := hold.ValidateCandidate(candidate); err != nil {
			return HoldRequest{}, usage(err.Error())
		}
		r.Candidate = candidate
		r.args = append(r.args, "--candidate", candidate)
	}
	if c.IsSet("ttl") {
		r.args = append(r.args, "--ttl", strconv.FormatUint(uint64(ttl), 10))
	}
	if r.AcquireTimeout, err = acquireFlag(c); err != nil {
		return HoldRequest{}, err
	}
	if r.AcquireTimeout != nil {
		r.args = append(r.args, "--acquire-timeout", c.String("acquire-timeout"))
	}
	if r.target, err = resolveTarget(c, env, kind, true); err != nil {
		return HoldRequest{}, err
	}
	r.Local, r.Server, r.ServerURL = r.target.local, r.target.raw, r.target.server.URL
	if r.target.etcd != "" {
		r.ServerURL, r.Etcd = r.target.etcd, true
	}
	r.args = append(r.args, r.target.args(c)...)
	return r, nil
}

// ProbeLoopbackPeer refuses, with 64 before anything starts, a lock's
// cleartext loopback server whose port another user serves, when a token
// would go to it: what the hold would refuse when it opens the authority,
// for a caller (the supervisor's embedded hold) that must refuse first. An
// etcd:// cluster is probed where it is opened (etcd.Authority's
// ProbeLoopbackPeers).
func (r HoldRequest) ProbeLoopbackPeer(c *cli.Context, env hold.LookupEnv) error {
	t := r.target
	if t.local || t.etcd != "" || !t.verifiesLoopbackPeer(c) || !hold.TokenConfigured(env) {
		return nil
	}
	client, err := hold.NewClient(hold.ClientOptions{Server: t.server, CapabilityBearing: true, ConnectTimeout: t.connect, VerifyLoopbackPeer: true})
	if err != nil {
		return usage(err.Error())
	}
	defer client.CloseIdleConnections()
	return probeLoopbackPeer(client, t.connect)
}

// Args is the octostore command line (without the program) that runs this
// request for name with JSONL output.
func (r HoldRequest) Args(name string) []string {
	// "--" keeps a name that starts with '-' a positional word.
	return append(append([]string{}, r.args...), "--", name)
}

// args are the server flags that reproduce t. A defaulted server stays
// unnamed, so the hold knows it chose the hosted default (and can hint at
// --server local when that is unreachable); it resolves the same default
// from the same environment.
func (t target) args(c *cli.Context) []string {
	var a []string
	if !t.defaulted {
		a = append(a, "--server", t.raw)
	}
	if c.Bool("allow-insecure-http") {
		a = append(a, "--allow-insecure-http")
	}
	if c.Bool("allow-cleartext-credentials") {
		a = append(a, "--allow-cleartext-credentials")
	}
	return a
}

// spec is the hold.HoldSpec of r for name, printing to out and diag.
func (r HoldRequest) spec(name string, out, diag io.Writer) hold.HoldSpec {
	return hold.HoldSpec{Kind: r.Kind, Name: name, Candidate: r.Candidate, TTL: r.TTL,
		AcquireTimeout: r.AcquireTimeout, ShutdownTimeout: r.target.shutdown,
		Clock: hold.SystemClock{}, Jitter: hold.RandomJitter, Out: out, Diag: diag}
}

// defaultTTL is --ttl when not given, in seconds.
func defaultTTL(kind hold.Kind) uint {
	if kind == hold.KindLock {
		return 120
	}
	return 30
}

// ttlFlag reads --ttl within the kind's bounds.
func ttlFlag(c *cli.Context, kind hold.Kind) (uint32, error) {
	v := defaultTTL(kind)
	if c.IsSet("ttl") {
		v = c.Uint("ttl")
	}
	if v > 1<<32-1 {
		// ValidateTTL would see a truncated value; the range is the reason.
		return 0, usage("--ttl is out of range: " + hold.ValidateTTL(kind, 0).Error())
	}
	if err := hold.ValidateTTL(kind, uint32(v)); err != nil {
		return 0, usage(err.Error())
	}
	return uint32(v), nil
}

// acquireFlag reads --acquire-timeout; nil means wait forever (0 is allowed
// and times out at once).
func acquireFlag(c *cli.Context) (*time.Duration, error) {
	d, set, err := durationFlag(c, "acquire-timeout", 0)
	if err != nil {
		return nil, usage(err.Error())
	}
	if !set {
		return nil, nil
	}
	return &d, nil
}
