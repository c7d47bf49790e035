package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/cmd/internal/cliorder"
	"github.com/octostore-supervisor/supervisor/cmd/internal/holdcli"
	"github.com/octostore-supervisor/supervisor/cmd/internal/holdroot"
	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform"
)

// version is stamped by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	// The guardian, shims and their helpers: internal, they bypass the command
	// line entirely. (Started from this binary when no lean helper image is
	// bundled with it: contain, helpercache_linux.go.)
	if code, ok := contain.HelperMain(os.Args); ok {
		os.Exit(code)
	}
	// The embedded hold: the octostore client, run as the supervisor's hold
	// process (see embeddedHold). On unix the guardian starts it as the root
	// of its own group (holdroot.Main); HoldArg runs it plainly.
	if code, ok := holdroot.Main(version, os.Args); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == HoldArg {
		// Before anything else: its event channel and token are the
		// supervisor's, not the worker's to take. (Started by a non-root
		// supervisor it is non-dumpable from execve already: contain's
		// helperImage.)
		if err := platform.SetNonDumpable(); err != nil {
			fmt.Fprintf(os.Stderr, "octostore-supervisor: embedded hold: %v\n", err)
			os.Exit(contain.ExitSoftware)
		}
		args := append([]string{"octostore"}, os.Args[2:]...)
		os.Exit(holdcli.Main(version, args, os.LookupEnv, holdcli.Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(run(os.Args, os.Environ(), os.Stdout, os.Stderr))
}

// usageError is a bad argument or environment value: exit 64, nothing started.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args, env []string, stdout, stderr io.Writer) int {
	code := contain.ExitOK
	app := newApp(env, stdout, stderr, &code)
	// Every form, where the error belongs to no one command: the usage
	// text shows flags after the command, where the parser takes them (a
	// flag given before it is refused, naming where it goes: cliorder).
	every := holdcli.FormatUsage(app.UsageText)
	// Upstream's dependency probe: one static binary has none to miss.
	if len(args) >= 2 && args[1] == "--check-dependencies" {
		if len(args) != 2 {
			fmt.Fprintln(stderr, every)
			return contain.ExitUsage
		}
		fmt.Fprintln(stdout, "octostore-supervisor dependencies are available")
		return contain.ExitOK
	}
	if msg := cliorder.Misplaced(app, args); msg != "" {
		// The misplaced flag may belong to any command.
		fmt.Fprintf(stderr, "octostore-supervisor: %s\n%s\n", hold.TerminalSafe(msg), every)
		return contain.ExitUsage
	}
	if err := app.Run(literalPositionals(args)); err != nil {
		var ue usageError
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			fmt.Fprintln(stderr, err.Error())
			return ec.ExitCode()
		}
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "octostore-supervisor: %s\n", ue.msg)
		} else {
			fmt.Fprintf(stderr, "octostore-supervisor: %v\n%s\n", err, every)
		}
		return contain.ExitUsage
	}
	return code
}

func newApp(env []string, stdout, stderr io.Writer, code *int) *cli.App {
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "octostore-supervisor %s\n", c.App.Version) }
	supervise := func(kind string) *cli.Command {
		return &cli.Command{
			Name:      kind,
			Usage:     "run a worker only while this " + kind + " hold has authority",
			ArgsUsage: argsUsage(kind),
			Flags:     superviseFlags(),
			Action: func(c *cli.Context) error {
				cfg, err := configFrom(c, kind, env)
				if err != nil {
					return err
				}
				cfg.Stdout, cfg.Stderr, cfg.Env = stdout, stderr, env
				fmt.Fprint(stderr, foundInPATH(c.Args().Get(2), cfg.Worker))
				testHooks(&cfg, env)
				*code = contain.SuperviseLean(context.Background(), cfg)
				if cfg.Survivors != nil {
					_ = cfg.Survivors.Close()
				}
				return nil
			},
			OnUsageError: usageErr,
		}
	}
	app := &cli.App{
		Name:            "octostore-supervisor",
		Usage:           "run a protected worker only while an OctoStore hold has authority, and prove its whole process tree gone on any loss or doubt",
		Version:         version,
		Description:     description,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Commands:        []*cli.Command{supervise("election"), supervise("lock"), runCommand(env, stdout, stderr, code), doctorCommand(env, stdout), sweepCommand(stdout)},
		OnUsageError:    usageErr,
		ExitErrHandler:  func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageIn(c, "missing <election|lock>")
			}
			return usageIn(c, fmt.Sprintf("unknown kind %q: expected election or lock", c.Args().First()))
		},
	}
	holdcli.SetUsageText(app)
	return app
}

// usageIn is a usage error in c's command: the message, then that command's
// usage (the program's lists every command).
func usageIn(c *cli.Context, msg string) error {
	return usageError{msg + "\n" + holdcli.FormatUsage(c.Command.UsageText)}
}

// usageErr is every command's OnUsageError: a flag the parser refused.
func usageErr(c *cli.Context, err error, _ bool) error { return usageIn(c, err.Error()) }

func argsUsage(kind string) string {
	if kind == "lock" {
		return "<lock-name> - <worker-program> [-- <hold command ...>]"
	}
	return "<election-id> <candidate-id> <worker-program> [-- <hold command ...>]"
}

const description = `The hold command (normally "octostore election hold ... --json" or
"octostore lock hold ... --json") prints JSONL authority events. The worker program is
started with no arguments only after a valid, fresh "leader"/"acquired" event and a
local deadline armed in a separate guardian process. On lost, uncertain, error, an
expired deadline, a malformed event, an unexpected exit or a signal, the worker's
whole process tree is killed and proven gone before the hold is asked to release and
before any terminal line is printed. stdout carries supervisor lines only.

Environment (flags win over these):
  OCTOSTORE_SUPERVISOR_TERM_GRACE_SECONDS     TERM->KILL grace in whole seconds (>= 1, default 1)
  OCTOSTORE_SUPERVISOR_MAX_SILENCE_SECONDS    locks only: longest deadline per event, 1..20 (default 20)
  OCTOSTORE_SUPERVISOR_REQUIRE_WORKER_READY   1: report authority only after the worker creates
                                              $OCTOSTORE_SUPERVISOR_READY_FILE (default 0)
The worker gets OCTOSTORE_FENCING_TERM and OCTOSTORE_SUPERVISOR_READY_FILE; OCTOSTORE_TOKEN
and OCTOSTORE_TOKEN_FILE are removed from its environment.

Exit codes: 0 released, 11 acquire timeout, 20 authority lost/uncertain/stale/expired,
64 usage, 70 protocol or containment failure, 129/130/143 after SIGHUP/SIGINT/SIGTERM.`

// literalPositionals keeps <expected-name> <candidate|-> <worker> literal even
// when a word starts with '-' (election ids may): they are the three words
// before the hold command's "--" (or the last three in the embedded form), and
// a "--" inserted before them ends flag parsing there. The reference script
// never parsed them as options either.
func literalPositionals(args []string) []string {
	if len(args) < 2 || (args[1] != "election" && args[1] != "lock") {
		return args
	}
	sep := slices.Index(args[2:], "--")
	if sep < 0 {
		// The embedded form has no "--": its three words are the last three.
		// A name such as an election id may start with '-' (ids are base64url),
		// so unless that word is one of our flags, end flag parsing before it.
		if n := len(args); n >= 5 && strings.HasPrefix(args[n-3], "-") && !isFlagWord(args[n-3]) {
			return slices.Concat(args[:n-3], []string{"--"}, args[n-3:])
		}
		return args
	}
	if sep < 3 {
		return args // malformed: let the usual validation report it
	}
	sep += 2
	out := append([]string{}, args[:sep-3]...)
	out = append(out, "--")
	return append(out, args[sep-3:]...)
}

// isFlagWord reports whether w spells one of the supervise flags ("-x",
// "--x" or "--x=value", and -h/--help).
func isFlagWord(w string) bool {
	name := strings.TrimLeft(w, "-")
	name, _, _ = strings.Cut(name, "=")
	if name == "h" || name == "help" {
		return true
	}
	for _, f := range superviseFlags() {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}
