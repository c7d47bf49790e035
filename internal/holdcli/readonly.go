package holdcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
)

// The read-only commands (docs/protocol.md "Commands and flags",
// "Read-only commands"): election create|status|watch and lock status|watch.
// create and status exit 0 on success and 70 on any API failure; watch runs
// until a signal (130/143). Local validation exits 64 before any request is
// sent.

// readFlags are the flags of the read-only commands. Only lock commands carry a
// capability (the bearer token), so only they have --allow-insecure-http;
// upstream's parser refuses it on the election commands.
func readFlags(lock bool) []cli.Flag {
	server := "OctoStore server URL (default $OCTOSTORE_URL, else " + hold.DefaultElectionServer + ")"
	if lock {
		server = "OctoStore server URL (or $OCTOSTORE_URL; required for locks)"
	}
	flags := []cli.Flag{&cli.StringFlag{Name: "server", Usage: server}}
	if lock {
		flags = append(flags, &cli.BoolFlag{Name: "allow-insecure-http", Usage: "allow plain http to a non-loopback server (development only)"})
	}
	return append(flags,
		&cli.BoolFlag{Name: "json", Usage: "print JSON (watch: one JSON snapshot per line)"},
		&cli.StringFlag{Name: "connect-timeout", Value: "5s"},
		&cli.StringFlag{Name: "request-timeout", Value: "10s"},
		&cli.StringFlag{Name: "shutdown-timeout", Value: "2s"},
	)
}

// readCommand builds one read-only command; args is how many positional words
// it takes (0 or 1) and what to call the one in messages.
func readCommand(name, usageText, argName string, lock bool, action func(*cli.Context) error) *cli.Command {
	want := 0
	if argName != "" {
		want = 1
	}
	return &cli.Command{
		Name:         name,
		Usage:        usageText,
		ArgsUsage:    argName,
		Flags:        readFlags(lock),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return usage(err.Error()) },
		Action: func(c *cli.Context) error {
			if c.NArg() != want {
				if want == 0 {
					return usage(fmt.Sprintf("unexpected argument %q", c.Args().First()))
				}
				return usage(name + " needs exactly one " + argName)
			}
			return action(c)
		},
	}
}

// publicClientFor is clientFor for the election read commands, which carry no
// capability: plain http is allowed to any host and proxies are honoured, as
// upstream does (docs/protocol.md "Server selection"). Same order: server,
// timeouts, CA bundle.
func publicClientFor(c *cli.Context, env hold.LookupEnv) (*hold.Client, error) {
	var flag *string
	if c.IsSet("server") {
		s := c.String("server")
		flag = &s
	}
	envURL, _ := env("OCTOSTORE_URL")
	raw, err := hold.ResolveServer(flag, envURL, hold.KindElection)
	if err != nil {
		return nil, usage(err.Error())
	}
	server, err := hold.ValidateServer(raw, false, false)
	if err != nil {
		return nil, usage(err.Error())
	}
	connect, _, err1 := durationFlag(c, "connect-timeout", 5*time.Second)
	request, _, err2 := durationFlag(c, "request-timeout", 10*time.Second)
	shutdown, _, err3 := durationFlag(c, "shutdown-timeout", 2*time.Second)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, usage(err.Error())
	}
	if err := hold.ValidateTimeouts(connect, request, shutdown); err != nil {
		return nil, usage(err.Error())
	}
	var ca *string
	if v, ok := env("OCTOSTORE_CA_BUNDLE"); ok {
		ca = &v
	}
	client, err := hold.NewClient(hold.ClientOptions{Server: server, CapabilityBearing: false,
		ConnectTimeout: connect, RequestTimeout: request, CABundle: ca})
	if err != nil {
		return nil, usage(err.Error())
	}
	return client, nil
}

// lockClientAndToken validates in upstream's lock order: server, timeouts and
// CA bundle (clientFor), then the token.
func lockClientAndToken(c *cli.Context, env hold.LookupEnv, in io.Reader, stderr io.Writer) (*hold.Client, string, error) {
	client, _, err := clientFor(c, env, hold.KindLock)
	if err != nil {
		return nil, "", err
	}
	token, warning, err := hold.LoadToken(env, in)
	if err != nil {
		return nil, "", usage(err.Error())
	}
	if warning != "" {
		fmt.Fprintf(stderr, "octostore: %s\n", warning)
	}
	return client, token, nil
}

// apiFailure is exit 70 with the failure's diagnostic, the token redacted and
// control characters escaped.
func apiFailure(err error, token string) error {
	var f *hold.Failure
	if !errors.As(err, &f) {
		return exitError{hold.ExitSoftware, hold.TerminalSafe(hold.Redact(err.Error(), token))}
	}
	return exitError{hold.ExitSoftware, hold.TerminalSafe(f.DiagnosticRedacting(token))}
}

func electionCreate(env hold.LookupEnv, stdout io.Writer) *cli.Command {
	return readCommand("create", "create one election room; give its ID to every candidate", "", false, func(c *cli.Context) error {
		if store, _, ok, err := localFor(c, env, hold.KindElection); ok {
			if err != nil {
				return err
			}
			return localCreate(c, store, stdout)
		}
		client, err := publicClientFor(c, env)
		if err != nil {
			return err
		}
		defer client.CloseIdleConnections()
		room, err := hold.CreateElection(context.Background(), client)
		if err != nil {
			return apiFailure(err, "")
		}
		if c.Bool("json") {
			_, _ = stdout.Write(append(room.JSON(), '\n'))
			return nil
		}
		fmt.Fprintf(stdout, "authority: %s\nelection: %s\ngive every candidate this same ID; do not create one room per candidate\n",
			hold.TerminalSafe(client.Server().URL), hold.TerminalSafe(room.ElectionID))
		return nil
	})
}

func electionStatus(env hold.LookupEnv, stdout io.Writer) *cli.Command {
	return readCommand("status", "print the current leader or vacant state", "<election_id>", false, func(c *cli.Context) error {
		if store, _, ok, err := localFor(c, env, hold.KindElection); ok {
			if err != nil {
				return err
			}
			return localStatus(c, store, hold.KindElection, stdout)
		}
		client, err := publicClientFor(c, env)
		if err != nil {
			return err
		}
		defer client.CloseIdleConnections()
		st, err := hold.GetElectionStatus(context.Background(), client, c.Args().First())
		if err != nil {
			return apiFailure(err, "")
		}
		server := hold.TerminalSafe(client.Server().URL)
		switch {
		case c.Bool("json"):
			_, _ = stdout.Write(append(st.JSON(), '\n'))
		case st.Leader != nil:
			fmt.Fprintf(stdout, "%s · leader %s · term %d · expires %s · authority %s\n", hold.TerminalSafe(st.ElectionID),
				hold.TerminalSafe(st.Leader.CandidateID), st.Leader.Term, hold.RFC3339Offset(st.Leader.ExpiresAt), server)
		default:
			// Upstream keys the human line on the leader object, not on
			// the status string.
			fmt.Fprintf(stdout, "%s · vacant · authority %s\n", hold.TerminalSafe(st.ElectionID), server)
		}
		return nil
	})
}

func lockStatus(env hold.LookupEnv, in io.Reader, stdout, stderr io.Writer) *cli.Command {
	return readCommand("status", "print whether a lock is free or held (bearer token from OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN)", "<name>", true, func(c *cli.Context) error {
		if store, _, ok, err := localFor(c, env, hold.KindLock); ok {
			if err != nil {
				return err
			}
			return localStatus(c, store, hold.KindLock, stdout)
		}
		client, token, err := lockClientAndToken(c, env, in, stderr)
		if err != nil {
			return err
		}
		defer client.CloseIdleConnections()
		st, err := hold.GetLockStatus(context.Background(), client, c.Args().First(), token)
		if err != nil {
			return apiFailure(err, token)
		}
		if c.Bool("json") {
			_, _ = stdout.Write(append(st.JSON(token), '\n'))
			return nil
		}
		fmt.Fprintf(stdout, "%s · %s · term %d · authority %s\n", hold.TerminalSafe(hold.Redact(st.Name, token)),
			hold.TerminalSafe(hold.Redact(st.Status, token)), st.FencingToken, hold.TerminalSafe(client.Server().URL))
		return nil
	})
}

func electionWatch(env hold.LookupEnv, stdout, stderr io.Writer, code *int) *cli.Command {
	return readCommand("watch", "print the election's status now and after every change, until interrupted", "<election_id>", false, func(c *cli.Context) error {
		if store, _, ok, err := localFor(c, env, hold.KindElection); ok {
			if err != nil {
				return err
			}
			*code = localWatch(c, store, hold.KindElection, stdout, stderr)
			return nil
		}
		client, err := publicClientFor(c, env)
		if err != nil {
			return err
		}
		*code = runWatch(&hold.Watch{Client: client, Kind: hold.KindElection, Name: c.Args().First(),
			JSON: c.Bool("json"), Out: stdout, Diag: stderr})
		return nil
	})
}

func lockWatch(env hold.LookupEnv, in io.Reader, stdout, stderr io.Writer, code *int) *cli.Command {
	return readCommand("watch", "print the lock's status now and after every change, until interrupted (bearer token as for lock status)", "<name>", true, func(c *cli.Context) error {
		if store, _, ok, err := localFor(c, env, hold.KindLock); ok {
			if err != nil {
				return err
			}
			*code = localWatch(c, store, hold.KindLock, stdout, stderr)
			return nil
		}
		client, token, err := lockClientAndToken(c, env, in, stderr)
		if err != nil {
			return err
		}
		*code = runWatch(&hold.Watch{Client: client, Kind: hold.KindLock, Name: c.Args().First(), Token: token,
			JSON: c.Bool("json"), Out: stdout, Diag: stderr})
		return nil
	})
}

// runWatch installs the SIGINT/SIGTERM handlers only now, after validation, as
// upstream does: before this a signal kills the process, after it a signal
// ends the watch with 130/143.
func runWatch(w *hold.Watch) int {
	defer w.Client.CloseIdleConnections()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return w.Run(context.Background(), sigs)
}
