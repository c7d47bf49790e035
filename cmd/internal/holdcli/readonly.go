package holdcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
)

// The read-only commands (docs/protocol.md "Commands and flags",
// "Read-only commands"): election create|status|watch and lock status|watch.
// create and status exit 0 on success and 70 on any API failure; watch runs
// until a signal (130/143). Local validation exits 64 before any request is
// sent.

// readFlags are the flags of the read-only commands. Upstream's election
// commands have no --allow-insecure-http, since over HTTP they carry no
// capability; ours take it like every command (clientFlags), because the
// etcd authority refuses cleartext to a non-loopback member for all of them.
func readFlags(kind hold.Kind) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print JSON (watch: one JSON snapshot per line)"},
	}, clientFlags(kind)...)
}

// readCommand builds one read-only command; args is how many positional words
// it takes (0 or 1) and what to call the one in messages.
func readCommand(name, usageText, argName string, kind hold.Kind, action func(*cli.Context) error) *cli.Command {
	want := 0
	if argName != "" {
		want = 1
	}
	return &cli.Command{
		Name:         name,
		Usage:        usageText,
		ArgsUsage:    argName,
		Flags:        readFlags(kind),
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() != want {
				if want == 0 {
					return usageIn(c, fmt.Sprintf("unexpected argument %q", c.Args().First()))
				}
				return usageIn(c, name+" needs exactly one "+argName)
			}
			return action(c)
		},
	}
}

// withAuthority resolves and opens the command's authority (target), runs
// f on it and closes it. Election reads carry no capability: plain http is
// allowed to any host and proxies are honoured, as upstream does
// (docs/protocol.md "Server selection"); lock reads carry the bearer token.
func withAuthority(c *cli.Context, env hold.LookupEnv, kind hold.Kind, in io.Reader, stderr io.Writer, f func(hold.Authority) error) error {
	t, err := resolveTarget(c, env, kind, kind == hold.KindLock)
	if err != nil {
		return err
	}
	a, err := t.open(c, env, in, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	return f(a)
}

// apiFailure is exit 70 with the failure's diagnostic, the token redacted and
// control characters escaped.
func apiFailure(err error, token string) error {
	var f *hold.Failure
	if !errors.As(err, &f) {
		return exitError{code: hold.ExitSoftware, msg: hold.TerminalSafe(hold.Redact(err.Error(), token))}
	}
	return exitError{code: hold.ExitSoftware, msg: hold.TerminalSafe(f.DiagnosticRedacting(token))}
}

func electionCreate(env hold.LookupEnv, stdout io.Writer) *cli.Command {
	return readCommand("create", "create one election room; give its ID to every candidate", "", hold.KindElection, func(c *cli.Context) error {
		return withAuthority(c, env, hold.KindElection, nil, nil, func(a hold.Authority) error {
			room, err := a.CreateElection(context.Background())
			if err != nil {
				return failed(err)
			}
			if c.Bool("json") {
				_, _ = stdout.Write(append(room.JSON(), '\n'))
				return nil
			}
			fmt.Fprintf(stdout, "authority: %s\nelection: %s\ngive every candidate this same ID; do not create one room per candidate\n",
				hold.TerminalSafe(a.Server()), hold.TerminalSafe(room.ElectionID))
			return nil
		})
	})
}

func electionStatus(env hold.LookupEnv, stdout io.Writer) *cli.Command {
	return readCommand("status", "print the current leader or vacant state", "<election_id>", hold.KindElection, func(c *cli.Context) error {
		return withAuthority(c, env, hold.KindElection, nil, nil, func(a hold.Authority) error {
			return printStatus(c, a, hold.KindElection, stdout)
		})
	})
}

func lockStatus(env hold.LookupEnv, in io.Reader, stdout, stderr io.Writer) *cli.Command {
	return readCommand("status", "print whether a lock is free or held (bearer token from OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN)", "<name>", hold.KindLock, func(c *cli.Context) error {
		return withAuthority(c, env, hold.KindLock, in, stderr, func(a hold.Authority) error {
			return printStatus(c, a, hold.KindLock, stdout)
		})
	})
}

// printStatus prints one status reading: --json, or the human line.
func printStatus(c *cli.Context, a hold.Authority, kind hold.Kind, stdout io.Writer) error {
	rep, err := a.Status(context.Background(), kind, c.Args().First())
	if err != nil {
		return failed(err)
	}
	if c.Bool("json") {
		_, _ = stdout.Write(append(rep.JSON(), '\n'))
	} else {
		fmt.Fprintln(stdout, rep.Human())
	}
	return nil
}

func electionWatch(env hold.LookupEnv, stdout, stderr io.Writer, code *int) *cli.Command {
	return readCommand("watch", "print the election's status now and after every change, until interrupted", "<election_id>", hold.KindElection, func(c *cli.Context) error {
		return withAuthority(c, env, hold.KindElection, nil, stderr, func(a hold.Authority) error {
			*code = runWatch(c, a, hold.KindElection, stdout, stderr)
			return nil
		})
	})
}

func lockWatch(env hold.LookupEnv, in io.Reader, stdout, stderr io.Writer, code *int) *cli.Command {
	return readCommand("watch", "print the lock's status now and after every change, until interrupted (bearer token as for lock status)", "<name>", hold.KindLock, func(c *cli.Context) error {
		return withAuthority(c, env, hold.KindLock, in, stderr, func(a hold.Authority) error {
			*code = runWatch(c, a, hold.KindLock, stdout, stderr)
			return nil
		})
	})
}

// runWatch installs the SIGINT/SIGTERM handlers only now, after validation, as
// upstream does: before this a signal kills the process, after it a signal
// ends the watch with 130/143.
func runWatch(c *cli.Context, a hold.Authority, kind hold.Kind, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	spec := hold.WatchSpec{Kind: kind, Name: c.Args().First(), JSON: c.Bool("json"), Out: stdout, Diag: stderr}
	return a.Watch(context.Background(), spec, sigs)
}
