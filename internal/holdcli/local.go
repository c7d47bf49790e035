package holdcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/hold"
)

// localFor opens the host-local authority when --server (or $OCTOSTORE_URL)
// names it: "local" or file:///dir. ok is false for an OctoStore server URL,
// which the caller then validates as before. The three timeouts are checked
// as for a server (only --shutdown-timeout matters locally), so a command
// line that is wrong for one authority is wrong for both.
func localFor(c *cli.Context, env hold.LookupEnv, kind hold.Kind) (store *hold.LocalStore, shutdown time.Duration, ok bool, err error) {
	var flag *string
	if c.IsSet("server") {
		s := c.String("server")
		flag = &s
	}
	envURL, _ := env("OCTOSTORE_URL")
	raw, err := hold.ResolveServer(flag, envURL, kind)
	if err != nil || !hold.IsLocalServer(raw) {
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
	store, err = hold.OpenLocalStore(raw, env)
	if err != nil {
		return nil, 0, true, usage(err.Error())
	}
	if name := c.Args().First(); c.NArg() == 1 {
		if err := hold.ValidateLocalName(name); err != nil {
			store.Close()
			return nil, 0, true, usage(err.Error())
		}
	}
	return store, shutdown, true, nil
}

// localHold runs an election or lock hold on the local authority.
func localHold(c *cli.Context, store *hold.LocalStore, kind hold.Kind, ttl uint32, acquire *time.Duration, shutdown time.Duration, stdout, stderr io.Writer) int {
	defer store.Close()
	out, sigs, stop := outputAndSignals(c, stdout)
	defer stop()
	var h hold.Holder
	if kind == hold.KindLock {
		h = &hold.LocalLockHold{Store: store, Clock: hold.SystemClock{}, Jitter: hold.RandomJitter,
			Name: c.Args().First(), TTL: time.Duration(ttl) * time.Second,
			AcquireTimeout: acquire, ShutdownTimeout: shutdown, Out: out, Diag: stderr}
	} else {
		h = &hold.LocalElectionHold{Store: store, Clock: hold.SystemClock{}, Jitter: hold.RandomJitter,
			ElectionID: c.Args().First(), Candidate: c.String("candidate"), TTL: time.Duration(ttl) * time.Second,
			AcquireTimeout: acquire, ShutdownTimeout: shutdown, Out: out, Diag: stderr}
	}
	return h.Run(context.Background(), sigs)
}

// localCreate is `election create` on the local authority.
func localCreate(c *cli.Context, store *hold.LocalStore, stdout io.Writer) error {
	defer store.Close()
	id, err := store.CreateElection()
	if err != nil {
		return exitError{hold.ExitSoftware, hold.TerminalSafe(err.Error())}
	}
	if c.Bool("json") {
		path := "/elections/" + hold.EncodeSegment(id)
		room := hold.ElectionCreated{ElectionID: id, CampaignPath: path + "/campaign", StatusPath: path, WatchPath: path + "/watch"}
		_, _ = stdout.Write(append(room.JSON(), '\n'))
		return nil
	}
	fmt.Fprintf(stdout, "authority: %s\nelection: %s\ngive every candidate this same ID; do not create one room per candidate\n",
		hold.TerminalSafe(store.Server()), hold.TerminalSafe(id))
	return nil
}

// localStatus is `election status` / `lock status` on the local authority.
func localStatus(c *cli.Context, store *hold.LocalStore, kind hold.Kind, stdout io.Writer) error {
	defer store.Close()
	st, err := store.Status(kind, c.Args().First())
	if err != nil {
		return exitError{hold.ExitSoftware, hold.TerminalSafe(err.Error())}
	}
	if c.Bool("json") {
		_, _ = stdout.Write(append(st.JSON(), '\n'))
	} else {
		fmt.Fprintln(stdout, st.Human(store.Server()))
	}
	return nil
}

// localWatch is `election watch` / `lock watch` on the local authority.
func localWatch(c *cli.Context, store *hold.LocalStore, kind hold.Kind, stdout, stderr io.Writer) int {
	defer store.Close()
	_, sigs, stop := outputAndSignals(c, stdout)
	defer stop()
	w := &hold.LocalWatch{Store: store, Kind: kind, Name: c.Args().First(), JSON: c.Bool("json"), Out: stdout, Diag: stderr}
	return w.Run(context.Background(), sigs)
}
