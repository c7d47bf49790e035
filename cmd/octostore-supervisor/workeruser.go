package main

import (
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/contain"
)

// workerUserFlags shape a --worker-user worker and the worker's environment
// (supervise and run).
func workerUserFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "share-worker-user", Usage: "with --worker-user: let other live runs on this host run their workers as the same user, when they say so too (by default a run refuses a user another run uses: two workers of one user can read, trace and write each other)"},
		&cli.BoolFlag{Name: "worker-user-manager-ok", Usage: "with --worker-user: accept a USER whose service manager (systemd --user) runs or who is lingering, though the worker can have that manager start processes outside the run (systemd-run --user), which nothing of ours then ends (by default, on systemd hosts, such a user is refused)"},
		&cli.BoolFlag{Name: "clean-env", Usage: "give the worker, of our own user, the fresh environment a --worker-user worker gets, so API keys and CI tokens in ours do not reach it: HOME, USER, LOGNAME, SHELL, PATH=/usr/local/bin:/usr/bin:/bin, and TERM, LANG, LANGUAGE, TZ, LC_* kept (Linux, macOS)"},
		&cli.StringSliceFlag{Name: "worker-env", Usage: "with --worker-user or --clean-env: pass this variable of ours to the worker (repeatable); it otherwise gets a fresh environment for its user: HOME, USER, LOGNAME, SHELL, PATH, and TERM, LANG, LANGUAGE, TZ, LC_* kept"},
	}
}

// workerUserOptions adds the worker-user flags to a resolved isolation, or
// refuses them (usage error).
func workerUserOptions(c *cli.Context, iso contain.Isolation) (contain.Isolation, error) {
	if c.Bool("worker-user-manager-ok") && iso.User == nil {
		return iso, usageError{"--worker-user-manager-ok goes with --worker-user (without it the worker runs as our own user, whose service manager it can reach anyway)"}
	}
	if c.Bool("clean-env") && runtime.GOOS == "windows" {
		return iso, usageError{"--clean-env: not on Windows, whose programs need variables of the caller's session (SystemRoot, PATHEXT, …) that a fresh environment lacks; nothing was started"}
	}
	iso, err := iso.WithEnvOptions(contain.EnvOptions{Pass: c.StringSlice("worker-env"), Share: c.Bool("share-worker-user"),
		CleanEnv: c.Bool("clean-env"), Supervised: c.Command.Name != "run"})
	if err != nil {
		return iso, usageError{err.Error()}
	}
	return iso, nil
}

// allowNewPrivsFlag lets a run --worker-user command gain privileges.
func allowNewPrivsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "allow-new-privs", Usage: "with --worker-user: start the command without no_new_privs, which a --worker-user command otherwise gets (Linux), so setuid binaries and file capabilities work in it"}
}

// runNoNewPrivs is whether run starts its command with no_new_privs: when
// asked (--no-new-privs), and for a --worker-user command where the kernel
// has it, unless --allow-new-privs.
func runNoNewPrivs(c *cli.Context, iso contain.Isolation) (bool, error) {
	asked, allow := c.Bool("no-new-privs"), c.Bool("allow-new-privs")
	switch {
	case allow && iso.User == nil:
		return false, usageError{"--allow-new-privs goes with --worker-user (without it, run sets no_new_privs only when asked)"}
	case allow && asked:
		return false, usageError{"--allow-new-privs and --no-new-privs contradict each other"}
	case allow && (iso.Scope || iso.Fence) && !contain.RestrictsWithoutNoNewPrivs():
		return false, usageError{"--allow-new-privs: this supervisor lacks CAP_SYS_ADMIN (as root in a container does), so the worker's Landlock scope and fence can be applied only under no_new_privs; add --no-worker-scope to start the worker without them, or give the supervisor CAP_SYS_ADMIN"}
	case asked:
		if err := contain.NoNewPrivsUnsupported(); err != nil {
			return false, usageError{"--no-new-privs: " + err.Error()}
		}
		return true, nil
	}
	return iso.User != nil && !allow && contain.NoNewPrivsUnsupported() == nil, nil
}
