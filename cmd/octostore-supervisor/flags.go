package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/local"
)

const maxGrace = time.Hour

func superviseFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.DurationFlag{Name: "term-grace", Usage: "time between TERM and KILL during teardown; also reserved from every authority budget (default 1s, or $OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS)"},
		&cli.DurationFlag{Name: "max-silence", Usage: "locks only: arm no deadline further out than this per authority event, at most 20s (default 20s, or $OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS)"},
		&cli.BoolFlag{Name: "require-worker-ready", Usage: "report leader/acquired only after the worker creates $OCTOSTORE_SUPERVISOR_READY_FILE (or $OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY=1)"},
		&cli.DurationFlag{Name: "ready-timeout", Value: contain.DefaultReadyTimeout, Usage: "how long a required ready file may take"},
		&cli.DurationFlag{Name: "release-timeout", Value: contain.DefaultReleaseBudget, Usage: "how long the hold gets to confirm its release after SIGTERM"},
		&cli.StringFlag{Name: "worker-output", Value: string(contain.WorkerOutputStderr), Usage: "where the worker's stdout and stderr go: stderr (stdout stays supervisor-only) or inherit"},
	}, slices.Concat(embeddedFlags(), backendFlags(), isolationFlags(), workerUserFlags())...)
}

// isolationFlags separate the worker from the supervisor side (supervise and run).
func isolationFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "worker-user", Usage: "run only the worker as USER[:GROUP] (default group: USER's primary group), with no supplementary groups; needs the supervisor to run as root; not root, not the supervisor's own user"},
		&cli.BoolFlag{Name: "private-pids", Usage: "Linux: run the worker in a PID namespace of its own with its own /proc (it sees and signals only its own tree; everything in it dies with it); as root, or unprivileged through a user namespace"},
		&cli.BoolFlag{Name: "no-worker-scope", Usage: "Linux: start the worker without the Landlock scope it gets by default where the kernel has it (6.12+): inside it, the worker's signals (kill(-1) included), ptrace and abstract unix sockets reach only its own tree; a non-root supervisor's scoped worker runs with no_new_privs. Without scope, --private-pids or --worker-user, a worker of our own user can end the supervisor side and outlive it"},
	}
}

// resolveIsolation turns the isolation flags into an Isolation, or a usage error.
func resolveIsolation(c *cli.Context) (contain.Isolation, error) {
	if c.IsSet("worker-user") && c.String("worker-user") == "" {
		return contain.Isolation{}, usageError{"--worker-user needs a user name or uid"}
	}
	iso, err := contain.ResolveIsolation(contain.IsolationRequest{WorkerUser: c.String("worker-user"), PrivatePids: c.Bool("private-pids"), NoScope: c.Bool("no-worker-scope"),
		WorkerUserManagerOK: c.Bool("worker-user-manager-ok")})
	if err != nil {
		return iso, usageError{err.Error()}
	}
	return workerUserOptions(c, iso)
}

// backendFlags choose and shape the containment backend (supervise and run).
func backendFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "containment", Value: "auto", Usage: "containment backend: auto (cgroup v2 where usable, else process-group; job objects on Windows; said on stderr), cgroup, process-group or job"},
		&cli.StringFlag{Name: "cgroup-parent", Usage: "cgroup v2 directory to create this run's cgroups in (default: our own cgroup when delegated to us, else as root <cgroup2 mount>/octostore-supervisor)"},
		&cli.IntFlag{Name: "max-processes", Value: contain.DefaultMaxProcesses, Usage: "cgroup backend: pids.max of the worker's cgroup, where the pids controller is available; job backend (Windows): the worker job's active-process limit, none unless given"},
		&cli.StringFlag{Name: "memory-max", Usage: "memory limit of the whole worker tree, SIZE in bytes or with K, M or G (e.g. 512M): cgroup backend: memory.max of the worker's cgroup, no swap, and an OOM kills the tree together; job backend (Windows): the worker job's memory limit. Where it cannot be enforced: exit 64"},
		&cli.StringFlag{Name: "cpu-max", Usage: "CPU limit of the whole worker tree, in CPUs (a decimal, e.g. 0.5 or 2): cgroup backend: cpu.max of the worker's cgroup; job backend (Windows): a hard-capped CPU rate. Where it cannot be enforced: exit 64"},
	}
}

// resolveBackend turns the backend flags into a Backend, or a usage error.
func resolveBackend(c *cli.Context) (contain.Backend, error) {
	n := c.Int("max-processes")
	if n <= 0 {
		return contain.Backend{}, usageError{"--max-processes must be positive"}
	}
	req := contain.BackendRequest{
		Containment: c.String("containment"), CgroupParent: c.String("cgroup-parent"),
		MaxProcesses: n, MaxSet: c.IsSet("max-processes"), Scope: systemdScope(),
	}
	if err := resourceLimits(c, &req); err != nil {
		return contain.Backend{}, err
	}
	b, err := contain.ResolveBackend(req)
	if err != nil {
		return b, usageError{err.Error()}
	}
	testBackendHook(&b)
	return b, nil
}

// resourceLimits reads --memory-max and --cpu-max into req, or a usage error.
func resourceLimits(c *cli.Context, req *contain.BackendRequest) error {
	var err error
	if c.IsSet("memory-max") {
		if req.MemoryMax, err = contain.ParseMemoryMax(c.String("memory-max")); err != nil {
			return usageError{err.Error()}
		}
	}
	if c.IsSet("cpu-max") {
		if req.CPUMilli, err = contain.ParseCPUMax(c.String("cpu-max")); err != nil {
			return usageError{err.Error()}
		}
	}
	return nil
}

// envValue looks a variable up in an environment list; the last one wins.
func envValue(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

func digitsOnly(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// configFrom builds a supervise command's Config from its positional
// arguments and then its three sources, each read whole by a function of its
// own: the environment, then the flags (which override it), then the hold
// (embedded or given after --) with the host guard of its authority. Checks
// run in that order, so the first mistake found is the one reported.
func configFrom(c *cli.Context, kind string, env []string) (contain.Config, error) {
	cfg := contain.Config{
		Kind: events.Kind(kind), Grace: contain.DefaultGrace, SilenceCap: contain.DefaultSilenceCap,
		ReadyTimeout: c.Duration("ready-timeout"), ReleaseBudget: c.Duration("release-timeout"),
		ProofBound: contain.DefaultProofBound,
	}
	embedded, err := positionalConfig(c, kind, &cfg)
	if err != nil {
		return cfg, err
	}
	// Environment first (upstream's contract), then flags override.
	if err := envConfig(env, &cfg); err != nil {
		return cfg, err
	}
	if err := flagConfig(c, &cfg); err != nil {
		return cfg, err
	}
	worker, err := resolveProgram("worker program", cfg.Worker)
	if err != nil {
		return cfg, err
	}
	cfg.Worker = worker
	if err := holdConfig(c, kind, embedded, env, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Backend, err = resolveBackend(c); err != nil {
		return cfg, err
	}
	cfg.Isolation, err = resolveIsolation(c)
	return cfg, err
}

// positionalConfig reads the expected name, the candidate, the worker and,
// after --, an explicit hold command into cfg, and reports whether the hold is
// the embedded one (no --).
func positionalConfig(c *cli.Context, kind string, cfg *contain.Config) (embedded bool, err error) {
	args := c.Args().Slice()
	embedded = len(args) == 3
	if !embedded && (len(args) < 5 || args[3] != "--") {
		return false, usageIn(c, "expected <expected-name> <expected-candidate|-> <worker-program> [-- <hold command ...>]")
	}
	cfg.Name, cfg.Candidate, cfg.Worker = args[0], args[1], args[2]
	if !embedded {
		cfg.Hold = args[4:]
		if err := embeddedOnly(c); err != nil {
			return false, err
		}
	}
	if cfg.Name == "" {
		return embedded, usageIn(c, "the expected "+kind+" name must not be empty")
	}
	if kind == "election" && (cfg.Candidate == "" || cfg.Candidate == "-") {
		return embedded, usageIn(c, "an election needs a candidate id (not '-')")
	}
	if kind == "lock" {
		if cfg.Candidate != "-" {
			return embedded, usageIn(c, "a lock takes '-' in place of the candidate id")
		}
		cfg.Candidate = ""
	}
	return embedded, nil
}

// envConfig reads the upstream environment variables into cfg: the TERM
// grace, the silence cap and the worker readiness requirement.
func envConfig(env []string, cfg *contain.Config) error {
	if v, ok := envValue(env, "OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS"); ok {
		if !digitsOnly(v) {
			return usageError{"TERM grace must be a positive integer"}
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 || time.Duration(n)*time.Second > maxGrace {
			return usageError{"TERM grace must be positive (and at most one hour)"}
		}
		cfg.Grace = time.Duration(n) * time.Second
	}
	if v, ok := envValue(env, "OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS"); ok {
		if !digitsOnly(v) {
			return usageError{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS must be a positive integer"}
		}
		n, err := strconv.ParseUint(v, 10, 32)
		switch {
		case err != nil || n > 20:
			return usageError{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS may only shorten the 20-second session-safety cap"}
		case n == 0:
			return usageError{"OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS must be positive"}
		}
		cfg.SilenceCap = time.Duration(n) * time.Second
	}
	if v, ok := envValue(env, "OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY"); ok {
		if v != "0" && v != "1" {
			return usageError{"worker readiness requirement must be 0 or 1"}
		}
		cfg.RequireReady = v == "1"
	}
	return nil
}

// flagConfig reads the supervise flags into cfg; a flag that is set
// overrides what envConfig read from the environment.
func flagConfig(c *cli.Context, cfg *contain.Config) error {
	if c.IsSet("term-grace") {
		d := c.Duration("term-grace")
		if d <= 0 || d > maxGrace {
			return usageError{"--term-grace must be positive and at most 1h"}
		}
		cfg.Grace = d
	}
	if c.IsSet("max-silence") {
		d := c.Duration("max-silence")
		if d <= 0 || d > contain.DefaultSilenceCap {
			return usageError{"--max-silence must be positive and may only shorten the 20-second session-safety cap"}
		}
		cfg.SilenceCap = d
	}
	if c.IsSet("require-worker-ready") {
		cfg.RequireReady = c.Bool("require-worker-ready")
	}
	if cfg.ReadyTimeout <= 0 || cfg.ReleaseBudget <= 0 {
		return usageError{"--ready-timeout and --release-timeout must be positive"}
	}
	switch o := contain.WorkerOutput(c.String("worker-output")); o {
	case contain.WorkerOutputStderr, contain.WorkerOutputInherit:
		cfg.WorkerOutput = o
	default:
		return usageError{fmt.Sprintf("--worker-output must be stderr or inherit, not %q", o)}
	}
	return nil
}

// holdConfig sets up cfg's hold: the embedded one for its authority's flags,
// or the explicit command resolved to its program; then the host guard of
// that authority (the survivor record, the host key and, unless the embedded
// hold brings its own, the interlock).
func holdConfig(c *cli.Context, kind string, embedded bool, env []string, cfg *contain.Config) error {
	authority := local.ExplicitHoldAuthority
	if embedded {
		// The candidate as given: a lock's "-", which cfg holds as "".
		e, err := embeddedHold(c, kind, cfg.Name, c.Args().Get(1), env)
		if err != nil {
			return err
		}
		cfg.Hold, authority, cfg.Interlock = e.argv, e.authority, e.interlock
		if e.acquireTimeout != nil {
			cfg.AcquireTimeout = *e.acquireTimeout
		}
		cfg.EmbeddedHold, cfg.LightHold = true, e.light
	} else {
		program, err := resolveProgram("hold command", cfg.Hold[0])
		if err != nil {
			return err
		}
		cfg.Hold[0] = program
	}
	rec, interlock, err := hostGuard(authority, holdKind(kind), cfg.Name, cfg.Interlock == nil, env)
	if err != nil {
		return err
	}
	cfg.Survivors = rec
	cfg.HostKey = local.HostKey(authority, holdKind(kind), cfg.Name)
	if cfg.Interlock == nil {
		cfg.Interlock = interlock
	}
	return nil
}

// resolveProgram returns the absolute path of the program word names, found as
// a shell would - a bare name (no directory part) through PATH, anything else
// against the working directory - after checking that this platform can
// execute it (checkExecutable, executable_*.go), so a mistake exits 64 naming
// what is wrong (not found, a directory, not executable and why) instead of
// failing at exec after the hold has started. what names the program in the
// messages ("worker program", "hold command").
//
// A name PATH finds only through a relative entry (".", or an empty one) is
// refused, as exec.LookPath does: which file runs would depend on the working
// directory, which a shell user rarely means and an attacker can choose.
func resolveProgram(what, word string) (string, error) {
	bare := bareName(word)
	path := word
	if bare {
		found, err := exec.LookPath(word)
		switch {
		case errors.Is(err, exec.ErrDot):
			return "", usageError{fmt.Sprintf("%s %s is found only through a relative PATH entry; give its path (./%s) to run that one", what, word, word)}
		case err != nil:
			return "", usageError{fmt.Sprintf("%s not found in PATH: %s (give a path to run a file that is not in PATH)", what, word)}
		}
		path = found
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usageError{fmt.Sprintf("%s %s: %v", what, word, err)}
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", usageError{fmt.Sprintf("%s not found: %s", what, word)}
	case err != nil:
		return "", usageError{fmt.Sprintf("%s cannot be examined: %v", what, err)}
	case st.IsDir():
		return "", usageError{fmt.Sprintf("%s is a directory, not a program: %s", what, word)}
	case !st.Mode().IsRegular():
		return "", usageError{fmt.Sprintf("%s is not a regular file: %s", what, word)}
	}
	if err := checkExecutable(abs, st); err != nil {
		return "", usageError{fmt.Sprintf("%s is not executable: %s: %v", what, word, err)}
	}
	return abs, nil
}

// bareName reports whether a program word has no directory part, so a shell
// would look it up in PATH.
func bareName(word string) bool {
	return word != "" && word != "." && word != ".." && filepath.Base(word) == word
}

// foundInPATH is the diagnostic naming what a bare worker name resolved to;
// "" when the word was a path.
func foundInPATH(word, path string) string {
	if !bareName(word) {
		return ""
	}
	return fmt.Sprintf("octostore-supervisor: worker program %s is %s (found in PATH)\n", hold.TerminalSafe(word), hold.TerminalSafe(path))
}
