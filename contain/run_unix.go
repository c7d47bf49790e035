//go:build unix

package contain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// RunConfig is one `octostore-supervisor run`: any command, no authority.
type RunConfig struct {
	Argv       []string // absolute path of the program, then its arguments
	Env        []string
	Backend    Backend
	Grace      time.Duration
	ProofBound time.Duration
	Timeout    time.Duration // 0: none
	JSON       bool          // print one summary line on stdout at the end
	Stdout     io.Writer
	Stderr     io.Writer
}

// RunSummary is the --json line.
type RunSummary struct {
	SchemaVersion int    `json:"schema_version"`
	Source        string `json:"source"`
	Event         string `json:"event"`
	ExitCode      int    `json:"exit_code"`
	TimedOut      bool   `json:"timed_out,omitempty"`
	Containment   Report `json:"containment"`
}

// Run starts cfg.Argv in a fresh container, forwards INT/TERM/HUP to the whole
// container, and when the main process exits (or the timeout passes) kills
// everything left in the container and proves it empty. It returns the
// command's status (128+signal when signalled), or 70 when emptiness could not
// be proven. This is what a CI runner wraps each job step in.
func Run(ctx context.Context, cfg RunConfig) int {
	say := func(format string, args ...any) {
		fmt.Fprintf(cfg.Stderr, "octostore-supervisor: "+format+"\n", args...)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	absorbSignals()
	say("containment: %s", cfg.Backend)
	sweepStale(cfg.Backend, cfg.ProofBound, cfg.Stderr)
	platform.ReserveThreads(reservedThreads)
	if err := platform.BecomeSubreaper(); err != nil {
		say("%v", err)
		return ExitSoftware
	}
	_ = platform.SetNonDumpable()

	began := time.Now()
	l, name, err := launchGuardian(msg{WorkerArgv: cfg.Argv, WorkerEnv: cfg.Env, Ungated: true, Backend: &cfg.Backend,
		GraceMs: cfg.Grace.Milliseconds(), ProofMs: cfg.ProofBound.Milliseconds()}, nil, os.Stdout)
	if err != nil {
		say("%v", err)
		if l == nil {
			return ExitSoftware
		}
	}
	var timeout <-chan time.Time
	if cfg.Timeout > 0 {
		t := time.NewTimer(cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	code, timedOut := ExitSoftware, false
wait:
	for err == nil {
		select {
		case n := <-l.notes:
			if n.Op == opExited && n.Group == groupWorker {
				code = n.Code
				if n.Code < 0 {
					say("%s", n.Err)
					code = ExitSoftware
				}
				break wait
			}
		case s := <-sigs:
			// The command decides what a signal means; we only make sure every
			// process in its container receives it.
			if _, err := l.call(msg{Op: opSignal, Signal: int(s.(syscall.Signal))}, 5*time.Second); err != nil {
				say("forwarding %v: %v", s, err)
			}
		case <-timeout:
			say("the command ran past --timeout %v; stopping it", cfg.Timeout)
			timedOut = true
			break wait
		case <-l.dead:
			say("detached guardian exited before reporting verified containment; using main-process fallback")
			err = errGuardianLost
		case <-ctx.Done():
			break wait
		}
	}
	var rep Report
	if err == nil {
		var m msg
		m, err = l.call(msg{Op: opContain, Group: groupWorker}, cfg.Grace+cfg.ProofBound+5*time.Second)
		if err == nil && m.Report != nil {
			rep = *m.Report
		}
		if timedOut && m.Exited {
			code = m.Code
		} else if timedOut {
			// The main process died in the teardown: its status is the command's.
			select {
			case n := <-l.notes:
				if n.Op == opExited && n.Code >= 0 {
					code = n.Code
				}
			case <-time.After(time.Second):
			}
		}
		if _, cerr := l.call(msg{Op: opExit}, cfg.Grace+cfg.ProofBound+5*time.Second); cerr != nil && err == nil {
			say("the guardian did not confirm its exit: %v", cerr)
		}
	}
	if err != nil {
		l.kill()
		rep = fallbackSweeper(cfg.Backend, name).terminate(os.Getpid(), nil, time.Now().Add(cfg.Grace), cfg.ProofBound, cfg.Stderr)
		if rep.ProvenEmpty && cfg.Backend.Name == BackendCgroup {
			removeRun(cfg.Backend, name, cfg.Stderr)
		}
	} else {
		l.kill()
	}
	rep.DurationMs = time.Since(began).Milliseconds()
	if !rep.ProvenEmpty {
		for _, s := range rep.Survivors {
			say("survivor: pid %d state %s command %q", s.Pid, s.State, s.Command)
		}
		say("containment could not be proved")
		code = ExitSoftware
	}
	if cfg.JSON {
		rep.Survivors = nil
		b, _ := json.Marshal(RunSummary{SchemaVersion: 1, Source: "octostore-supervisor", Event: "run", ExitCode: code, TimedOut: timedOut, Containment: rep})
		_, _ = cfg.Stdout.Write(append(b, '\n'))
	}
	return code
}
