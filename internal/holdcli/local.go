package holdcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/local"
)

// localFor opens the host-local authority when --server (or $OCTOSTORE_URL)
// names it: "local" or file:///dir. ok is false for an OctoStore server URL,
// which the caller then validates as before. The three timeouts are checked
// as for a server (only --shutdown-timeout matters locally), so a command
// line that is wrong for one authority is wrong for both.
func localFor(c *cli.Context, env hold.LookupEnv, kind hold.Kind) (store *local.Store, shutdown time.Duration, ok bool, err error) {
	var flag *string
	if c.IsSet("server") {
		s := c.String("server")
		flag = &s
	}
	envURL, _ := env("OCTOSTORE_URL")
	raw, err := hold.ResolveServer(flag, envURL, kind)
	if err != nil || !local.IsServer(raw) {
		return nil, 0, false, nil // clientFor reports a resolution error in its place
	}
	connect, _, err1 := durationFlag(c, "connect-timeout", 5*time.Second)
	request, _, err2 := durationFlag(c, "request-timeout", 10*time.Second)
	shutdown, _, err3 := durationFlag(c, "shutdown-timeout", 2*time.Second)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, 0, true, usage(err.Error())
	}
	if err := hold.ValidateTimeouts(connect, request, shutdown); err != nil {
		return nil, 0, true, usage(err.Error())
	}
	store, err = local.Open(raw, env)
	if err != nil {
		return nil, 0, true, usage(err.Error())
	}
	if name := c.Args().First(); c.NArg() == 1 {
		if err := local.ValidateName(name); err != nil {
			store.Close()
			return nil, 0, true, usage(err.Error())
		}
	}
	return store, shutdown, true, nil
}

// localHold runs an election or lock hold on the local authority.
func localHold(c *cli.Context, store *local.Store, kind hold.Kind, ttl uint32, acquire *time.Duration, shutdown time.Duration, stdout, stderr io.Writer) int {
	defer store.Close()
	out, sigs, stop := outputAndSignals(c, stdout)
	defer stop()
	spec := hold.HoldSpec{Kind: kind, Name: c.Args().First(), TTL: time.Duration(ttl) * time.Second,
		AcquireTimeout: acquire, ShutdownTimeout: shutdown, Out: out, Diag: stderr}
	if kind == hold.KindElection {
		spec.Candidate = c.String("candidate")
	}
	return store.Hold(context.Background(), spec, sigs)
}

// localCreate is `election create` on the local authority.
func localCreate(c *cli.Context, store *local.Store, stdout io.Writer) error {
	defer store.Close()
	room, err := store.CreateElection(context.Background())
	if err != nil {
		return exitError{hold.ExitSoftware, hold.TerminalSafe(err.Error())}
	}
	id := room.ElectionID
	if c.Bool("json") {
		_, _ = stdout.Write(append(room.JSON(), '\n'))
		return nil
	}
	fmt.Fprintf(stdout, "authority: %s\nelection: %s\ngive every candidate this same ID; do not create one room per candidate\n",
		hold.TerminalSafe(store.Server()), hold.TerminalSafe(id))
	return nil
}

// localStatus is `election status` / `lock status` on the local authority.
func localStatus(c *cli.Context, store *local.Store, kind hold.Kind, stdout io.Writer) error {
	defer store.Close()
	st, err := store.Status(context.Background(), kind, c.Args().First())
	if err != nil {
		return exitError{hold.ExitSoftware, hold.TerminalSafe(err.Error())}
	}
	if c.Bool("json") {
		_, _ = stdout.Write(append(st.JSON(), '\n'))
	} else {
		fmt.Fprintln(stdout, st.Human())
	}
	return nil
}

// localWatch is `election watch` / `lock watch` on the local authority.
func localWatch(c *cli.Context, store *local.Store, kind hold.Kind, stdout, stderr io.Writer) int {
	defer store.Close()
	_, sigs, stop := outputAndSignals(c, stdout)
	defer stop()
	w := hold.WatchSpec{Kind: kind, Name: c.Args().First(), JSON: c.Bool("json"), Out: stdout, Diag: stderr}
	return store.Watch(context.Background(), w, sigs)
}
