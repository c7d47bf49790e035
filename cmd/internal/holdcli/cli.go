package holdcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/cmd/internal/cliorder"
	"github.com/octostore-supervisor/supervisor/hold"
)

// Streams are the standard streams a command runs with; Stdin is where
// OCTOSTORE_TOKEN_FILE=- reads the token from.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Main runs the octostore command line args (args[0] is the program name) and
// returns its exit status. It is the whole of cmd/octostore, and of
// octostore-supervisor's embedded hold, which re-executes that binary.
func Main(version string, args []string, env hold.LookupEnv, s Streams) int {
	return run(version, args, env, s.Stdin, s.Stdout, s.Stderr)
}

// exitError carries an exit code and a one-line message for stderr, and for
// a usage error the usage of the command it happened in (FormatUsage).
type exitError struct {
	code  int
	msg   string
	usage string
}

func (e exitError) Error() string { return e.msg }

func usage(msg string) error { return exitError{code: hold.ExitUsage, msg: msg} }

// usageIn is a usage error in c's command: its message and that command's
// usage.
func usageIn(c *cli.Context, msg string) error {
	return exitError{code: hold.ExitUsage, msg: msg, usage: FormatUsage(c.Command.UsageText)}
}

// usageErr is every command's OnUsageError: a flag the parser refused.
func usageErr(c *cli.Context, err error, _ bool) error { return usageIn(c, err.Error()) }

func run(version string, args []string, env hold.LookupEnv, stdin io.Reader, stdout, stderr io.Writer) int {
	code := hold.ExitOK
	app := newApp(version, env, stdin, stdout, stderr, &code)
	if msg := cliorder.Misplaced(app, args); msg != "" {
		fmt.Fprintf(stderr, "octostore: %s\n", hold.TerminalSafe(msg))
		return hold.ExitUsage
	}
	if err := app.Run(intersperse(args)); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			// Messages can quote argv (an unknown flag, a help topic);
			// escaping control characters keeps a crafted argument from
			// forging extra lines on stderr. The usage is ours, not argv.
			fmt.Fprintf(stderr, "octostore: %s\n", hold.TerminalSafe(ee.msg))
			if ee.usage != "" {
				fmt.Fprintln(stderr, ee.usage)
			}
			return ee.code
		}
		fmt.Fprintf(stderr, "octostore: %s\n", hold.TerminalSafe(err.Error()))
		return hold.ExitUsage
	}
	return code
}

// newApp is the octostore command line; commands that end in a status other
// than a usage error's set *code.
func newApp(version string, env hold.LookupEnv, stdin io.Reader, stdout, stderr io.Writer, code *int) *cli.App {
	app := &cli.App{
		Name:            "octostore",
		Usage:           "hold OctoStore election leadership and print its events",
		Version:         version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    usageErr,
		Commands: []*cli.Command{
			{
				Name:  "election",
				Usage: "elections: hold leadership",
				Subcommands: []*cli.Command{
					electionCreate(env, stdout), electionHold(env, stdout, stderr, code),
					electionStatus(env, stdout), electionWatch(env, stdout, stderr, code),
				},
				OnUsageError: usageErr,
			},
			{
				Name:  "lock",
				Usage: "locks: hold one exact work item",
				Subcommands: []*cli.Command{
					lockHold(env, stdin, stdout, stderr, code),
					lockStatus(env, stdin, stdout, stderr), lockWatch(env, stdin, stdout, stderr, code),
				},
				OnUsageError: usageErr,
			},
			{
				Name:         "serve",
				Usage:        "not part of this client",
				OnUsageError: usageErr,
				Action: func(*cli.Context) error {
					return usage("serve is not part of this client; to self-host an authority, run the upstream octostore server")
				},
			},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageIn(c, "a command is required (election hold ...); serve is not part of this client")
			}
			return usageIn(c, fmt.Sprintf("unknown command %q", c.Args().First()))
		},
	}
	SetUsageText(app)
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "octostore %s\n", c.App.Version) }
	return app
}

// durationFlag takes the hold's own duration syntax (ms, s, m, h, or bare seconds).
func durationFlag(c *cli.Context, name string, def time.Duration) (time.Duration, bool, error) {
	if !c.IsSet(name) {
		return def, false, nil
	}
	d, err := hold.ParseDuration(c.String(name))
	return d, true, err
}

func electionHold(env hold.LookupEnv, stdout, stderr io.Writer, code *int) *cli.Command {
	return holdCommand(hold.KindElection, "campaign for leadership of an election and hold it until lost or signalled", "<election_id>",
		append([]cli.Flag{
			&cli.StringFlag{Name: "candidate", Required: true, Usage: "this candidate's id (1-64 ASCII letters, digits, - _ . :)"},
		}, holdFlags(hold.KindElection, "leadership TTL in seconds (5-300)")...),
		env, nil, stdout, stderr, code)
}

func lockHold(env hold.LookupEnv, in io.Reader, stdout, stderr io.Writer, code *int) *cli.Command {
	return holdCommand(hold.KindLock, "acquire a lock and hold it until lost or signalled (bearer token from OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN)", "<name>",
		holdFlags(hold.KindLock, "lease TTL in seconds (1-3600)"),
		env, in, stdout, stderr, code)
}

// holdCommand is `election hold` / `lock hold`: validate (HoldFlags), open
// the authority (for locks on a server, then the token), and hold.
func holdCommand(kind hold.Kind, usageText, argName string, flags []cli.Flag, env hold.LookupEnv, in io.Reader, stdout, stderr io.Writer, code *int) *cli.Command {
	return &cli.Command{
		Name:         "hold",
		Usage:        usageText,
		ArgsUsage:    argName,
		Flags:        flags,
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageIn(c, kind.String()+" hold needs exactly one "+argName)
			}
			req, err := HoldFlags(c, kind, c.String("candidate"), env)
			if err != nil {
				return err
			}
			auth, err := req.target.open(c, env, in, stderr)
			if err != nil {
				return err
			}
			defer auth.Close()
			out, sigs, stop := outputAndSignals(c, stdout)
			defer stop()
			*code = auth.Hold(context.Background(), req.spec(c.Args().First(), out, stderr), sigs)
			return nil
		},
	}
}

// subcommands whose flags intersperse reorders.
var subcommands = map[string]bool{"hold": true, "create": true, "status": true, "watch": true}

// boolFlags of election hold (and help).
var boolFlags = map[string]bool{"json": true, "allow-insecure-http": true, "allow-cleartext-credentials": true, "help": true, "h": true}

// valueFlags take a value in the next word unless written --flag=value.
var valueFlags = map[string]bool{
	"candidate": true, "ttl": true, "acquire-timeout": true, "server": true,
	"connect-timeout": true, "request-timeout": true, "shutdown-timeout": true,
}

// intersperse moves the flags after "election hold" (and the other election and
// lock subcommands) ahead of its positional argument. Upstream's parser (clap)
// accepts them anywhere and its documented form is `election hold <id>
// --candidate C --json`; urfave/cli v2 stops parsing flags at the first
// positional word.
func intersperse(args []string) []string {
	if len(args) < 3 || (args[1] != "election" && args[1] != "lock") || !subcommands[args[2]] {
		return args
	}
	var flags, pos []string
	rest := args[3:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		// "--x" is always a flag (an unknown one is reported as such); a single
		// '-' word is a flag only when known, since an election id may start
		// with '-'.
		if strings.HasPrefix(a, "--") || (len(a) > 1 && a[0] == '-' && (valueFlags[name] || boolFlags[name])) {
			flags = append(flags, a)
			if valueFlags[name] && !strings.Contains(a, "=") && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
			continue
		}
		pos = append(pos, a)
	}
	out := append(append([]string{}, args[:3]...), flags...)
	return append(append(out, "--"), pos...)
}

// outputAndSignals picks JSONL or human output and installs the signal
// handlers. Upstream installs them only after validation: from here on a
// signal means "release and exit", never instant death.
func outputAndSignals(c *cli.Context, stdout io.Writer) (io.Writer, chan os.Signal, func()) {
	out := stdout
	if !c.Bool("json") {
		out = &humanWriter{w: stdout}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	return out, sigs, func() { signal.Stop(sigs) }
}

// holdFlags are the flags election hold and lock hold share.
func holdFlags(kind hold.Kind, ttlUsage string) []cli.Flag {
	return append([]cli.Flag{
		&cli.UintFlag{Name: "ttl", Value: defaultTTL(kind), Usage: ttlUsage},
		&cli.StringFlag{Name: "acquire-timeout", Usage: "give up acquiring after this long (exit 11); default: wait forever"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON event per line (what octostore-supervisor reads)"},
	}, clientFlags(kind)...)
}
