package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/contain"
)

func runCommand(env []string, stdout, stderr io.Writer, code *int) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run any command with guaranteed teardown of everything it starts (no authority)",
		ArgsUsage: "-- <command> [args...]",
		Description: `The command starts in a fresh container (a cgroup v2 leaf where available).
INT, TERM and HUP are forwarded to every process in it. When the command's main
process exits, or --timeout passes, everything left in the container is killed and
proven gone before octostore-supervisor exits with the command's status (128+signal
if it was signalled; 71 if that status was lost with a killed helper but everything
was proven gone; 70 if emptiness could not be proven). With --until-empty it waits
for everything the command started (daemons) to finish first. Wrap a CI job step
in it.`,
		Flags: append([]cli.Flag{
			&cli.DurationFlag{Name: "timeout", Usage: "stop the command after this long (TERM, grace, KILL); 0 means no limit"},
			&cli.DurationFlag{Name: "term-grace", Value: contain.DefaultGrace, Usage: "time between TERM and KILL when stopping what is left"},
			&cli.BoolFlag{Name: "until-empty", Usage: "after the main process exits, wait until everything it started has finished too (daemonizing commands), bounded by --timeout; exit with the main process's status"},
			&cli.BoolFlag{Name: "json", Usage: "print one summary line on stdout at the end (backend, proven_empty, processes killed after the main process ended, CPU time and peak memory where the cgroup reports them); it shares stdout with the command"},
			&cli.StringFlag{Name: "summary-file", Usage: "write the summary line to this file (replacing it, mode 0600) once the command's tree is proven gone, where the command cannot forge it"},
			&cli.BoolFlag{Name: "no-new-privs", Usage: "start the command with no_new_privs set (Linux): neither it nor anything it runs gains privileges through setuid binaries or file capabilities (a --worker-user command gets it by default)"},
			allowNewPrivsFlag(),
		}, slices.Concat(backendFlags(), isolationFlags(), workerUserFlags())...),
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) == 0 {
				return usageError{"run needs a command: octostore-supervisor run [flags] -- <command> [args...]"}
			}
			path, err := resolveProgram("command", args[0])
			if err != nil {
				return err
			}
			grace, timeout := c.Duration("term-grace"), c.Duration("timeout")
			if grace <= 0 || grace > maxGrace || timeout < 0 {
				return usageError{"--term-grace must be positive and at most 1h; --timeout must not be negative"}
			}
			summary, err := summaryPath(c.String("summary-file"))
			if err != nil {
				return err
			}
			b, err := resolveBackend(c)
			if err != nil {
				return err
			}
			iso, err := resolveIsolation(c)
			if err != nil {
				return err
			}
			if iso.PrivatePids && c.Bool("until-empty") {
				return usageError{"--until-empty cannot wait under --private-pids: when the command's main process exits, its PID namespace ends and the kernel kills everything left in it"}
			}
			nnp, err := runNoNewPrivs(c, iso)
			if err != nil {
				return err
			}
			*code = contain.RunLean(context.Background(), contain.RunConfig{
				Argv: append([]string{path}, args[1:]...), Env: env, Backend: b, Isolation: iso, NoNewPrivs: nnp, Grace: grace,
				ProofBound: contain.DefaultProofBound, Timeout: timeout, UntilEmpty: c.Bool("until-empty"),
				JSON: c.Bool("json"), SummaryFile: summary, Stdout: stdout, Stderr: stderr,
			})
			return nil
		},
	}
}

// summaryPath checks --summary-file before anything starts: an absolute path
// (the command may change nothing about where it points) in an existing
// directory, and not itself a directory. "" means none.
func summaryPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", usageError{"--summary-file " + p + ": " + err.Error()}
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return "", usageError{"--summary-file " + p + ": its directory " + filepath.Dir(abs) + " does not exist"}
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return "", usageError{"--summary-file " + p + " is a directory"}
	}
	return abs, nil
}

func sweepCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "sweep",
		Usage: "kill, prove empty and remove runs left by supervisors that died together with their guardians",
		Description: `A run's cgroup is named after its supervisor and guardian (pid and start time).
sweep touches only runs whose supervisor and guardian are both gone. Supervisors
also sweep at start.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "only list the abandoned runs"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per run"},
			&cli.StringFlag{Name: "cgroup-parent", Usage: "the cgroup v2 directory runs were created in (default as for supervising)"},
		},
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			b, err := contain.ResolveBackend(contain.BackendRequest{Containment: contain.BackendCgroup, CgroupParent: c.String("cgroup-parent"), LookOnly: true, Scope: systemdScope()})
			if errors.Is(err, contain.ErrNoScope) {
				return nil // nothing was ever left where runs would be
			}
			if err != nil {
				return usageError{err.Error()}
			}
			runs, err := contain.SweepStale(b, c.Bool("dry-run"), contain.DefaultProofBound)
			for _, r := range runs {
				if c.Bool("json") {
					j, _ := json.Marshal(r)
					fmt.Fprintln(stdout, string(j))
				} else {
					line := fmt.Sprintf("%s  processes %d  proven empty %v  removed %v", r.Dir, r.Processes, r.ProvenEmpty, r.Removed)
					if r.UnprovenSince != "" {
						line += "  unproven at start since " + r.UnprovenSince
					}
					if r.NotOurs {
						line += "  not ours: " + r.NotOursWhy() + ", left alone"
					}
					fmt.Fprintln(stdout, line)
				}
			}
			if err != nil {
				return cli.Exit("octostore-supervisor: sweep: "+err.Error(), contain.ExitSoftware)
			}
			for _, r := range runs {
				if !c.Bool("dry-run") && !r.ProvenEmpty && !r.NotOurs {
					return cli.Exit("octostore-supervisor: a swept run could not be proven empty", contain.ExitSoftware)
				}
			}
			return nil
		},
	}
}
