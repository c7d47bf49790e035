//go:build unix

package contain

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Run starts cfg.Argv in a fresh container, forwards INT/TERM/HUP to the whole
// container, and when the main process exits (or the timeout passes) kills
// everything left in the container and proves it empty. It returns the
// command's status (128+signal when signalled), or 70 when emptiness could not
// be proven. This is what a CI runner wraps each job step in.
func Run(ctx context.Context, cfg RunConfig) int {
	say := cfg.say
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
		GraceMs: cfg.Grace.Milliseconds(), ProofMs: cfg.ProofBound.Milliseconds()}, nil, nil, os.Stdout, nil)
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
	return finishRun(cfg, code, timedOut, rep)
}
