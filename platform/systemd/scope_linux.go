package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// SharedScope is the transient scope every supervisor of one service manager
// runs its runs in.
const SharedScope = "octostore-supervisor.scope"

// Join moves this process into the sub-cgroup leaf of SharedScope, starting
// the scope with this process in it where there is none, and returns the
// scope's cgroup (relative to the cgroup v2 mount). A scope just started holds
// us at its top; the caller moves us down (a delegated cgroup with processes
// may not pass controllers on).
func Join(ctx context.Context, leaf string) (string, error) {
	conn, err := connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	pid := uint32(os.Getpid())
	// Two tries: a scope may end between our look and our attach (its last
	// process exited), and another supervisor may start it between our
	// attach and our start.
	var errs []error
	for range 2 {
		err := conn.AttachProcessesToUnit(ctx, SharedScope, "/"+leaf, []uint32{pid})
		if err == nil {
			return controlGroup(ctx, conn)
		}
		errs = append(errs, fmt.Errorf("attach to %s: %w", SharedScope, err))
		err = startScope(ctx, conn, pid)
		if err == nil {
			return controlGroup(ctx, conn)
		}
		errs = append(errs, err)
		if !isDBusError(err, "org.freedesktop.systemd1.UnitExists") {
			break
		}
	}
	return "", fmt.Errorf("ask %s for a delegated scope: %w", manager(), errors.Join(errs...))
}

// Find returns SharedScope's cgroup, "" where the scope does not exist.
func Find(ctx context.Context) (string, error) {
	conn, err := connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	cg, err := controlGroup(ctx, conn)
	if err != nil && isDBusError(err, "org.freedesktop.systemd1.NoSuchUnit") {
		return "", nil
	}
	return cg, err
}

func startScope(ctx context.Context, conn *sd.Conn, pid uint32) error {
	props := []sd.Property{
		sd.PropDescription("octostore-supervisor: supervised runs"),
		sd.PropPids(pid),
		{Name: "Delegate", Value: dbus.MakeVariant(true)},
		// A scope that ended failed would otherwise stay, and refuse
		// both the next start (it exists) and the next attach (inactive).
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, SharedScope, "fail", props, done); err != nil {
		return fmt.Errorf("start %s: %w", SharedScope, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("start %s: the job ended %q", SharedScope, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("start %s: %w", SharedScope, ctx.Err())
	}
}

func controlGroup(ctx context.Context, conn *sd.Conn) (string, error) {
	p, err := conn.GetUnitTypePropertyContext(ctx, SharedScope, "Scope", "ControlGroup")
	if err != nil {
		return "", fmt.Errorf("read %s's cgroup: %w", SharedScope, err)
	}
	cg, ok := p.Value.Value().(string)
	if !ok || !strings.HasPrefix(cg, "/") {
		return "", fmt.Errorf("%s has no cgroup (%v)", SharedScope, p.Value)
	}
	return cg, nil
}

func isDBusError(err error, name string) bool {
	var e dbus.Error
	return errors.As(err, &e) && e.Name == name
}

// manager names the service manager we ask, for messages.
func manager() string {
	if os.Geteuid() == 0 {
		return "the system's service manager"
	}
	return "your user's service manager (user@" + strconv.Itoa(os.Geteuid()) + ".service)"
}

// connect opens a private connection to our service manager: the system's
// for root, else our user's, each on its own private socket, which needs no
// message bus. A user's is found through XDG_RUNTIME_DIR where that is ours,
// else at /run/user/<uid>, so a command started without a login's
// environment (runuser, su without -l, cron) finds it too.
func connect(ctx context.Context) (*sd.Conn, error) {
	if os.Geteuid() == 0 {
		conn, err := sd.NewSystemdConnectionContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("connect to the system's service manager (/run/systemd/private): %w", err)
		}
		return conn, nil
	}
	sock := userRuntimeDir() + "/systemd/private"
	conn, err := sd.NewConnection(func() (*dbus.Conn, error) {
		c, err := dbus.Dial("unix:path="+sock, dbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("connect to %s (%s; is it running? `loginctl enable-linger` starts it without a login): %w", manager(), sock, err)
	}
	return conn, nil
}

// userRuntimeDir is XDG_RUNTIME_DIR where it is a directory of ours, else
// /run/user/<uid>.
func userRuntimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil && int(st.Uid) == os.Geteuid() {
			return d
		}
	}
	return "/run/user/" + strconv.Itoa(os.Geteuid())
}
