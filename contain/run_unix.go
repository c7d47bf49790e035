//go:build unix

package contain

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Run starts cfg.Argv in a fresh container, forwards INT/TERM/HUP to the whole
// container, and when the main process exits (with UntilEmpty: when everything
// in the container has finished), or the timeout passes, kills everything left
// in the container and proves it empty. It returns the command's status
// (128+signal when signalled), ExitStatusLost when that status was lost with a
// killed helper, or 70 when emptiness could not be proven. This is what a CI
// runner wraps each job step in.
func Run(ctx context.Context, cfg RunConfig) int {
	say := cfg.say
	// Before anything of the run exists; the guardian shares it (kept).
	if err := claimWorkerUser(cfg.Isolation.User); err != nil {
		say("%v", err)
		return ExitUsage
	}
	defer cfg.Isolation.release()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	absorbSignals()
	say("containment: %s", cfg.Backend)
	for _, w := range cfg.Isolation.startWarnings() {
		say("warning: %s", w)
	}
	sweepStale(cfg.Backend, cfg.ProofBound, cfg.Stderr)
	reserveThreads()
	if err := errors.Join(adoptInherited(), platform.BecomeSubreaper()); err != nil {
		say("%v", err)
		return ExitSoftware
	}
	_ = platform.SetNonDumpable()

	e := runEnd{code: ExitSoftware, began: time.Now()}
	l, name, err := launchGuardian(msg{WorkerArgv: cfg.Argv, WorkerEnv: cfg.Isolation.workerEnviron(cfg.Env), Ungated: true, Backend: &cfg.Backend,
		Isolation: &cfg.Isolation, NoNewPrivs: cfg.NoNewPrivs,
		GraceMs: cfg.Grace.Milliseconds(), ProofMs: cfg.ProofBound.Milliseconds(), Stats: true}, nil, nil, os.Stdout, cfg.Isolation.kept(), holdStart{})
	if err != nil {
		say("%v", err)
		if l == nil {
			return ExitSoftware
		}
	} else if err = cfg.await(ctx, l, sigs, &e); err != nil {
		e.lost = true // the guardian died while the command ran
	}
	e.stopped = time.Now()
	var rep Report
	if err == nil {
		var m msg
		m, err = l.call(msg{Op: opContain, Group: groupWorker}, cfg.Grace+cfg.ProofBound+5*time.Second)
		if err != nil {
			e.lost = true
		} else if m.Report != nil {
			rep = *m.Report
		}
		if !e.known && m.Exited {
			e.takeStatus(m.Code, m.Signal)
		} else if !e.known && err == nil && (e.timedOut || ctx.Err() != nil) {
			// The main process died in the teardown: its status is the command's.
			select {
			case n := <-l.notes:
				if n.Op == opExited {
					e.takeStatus(n.Code, n.Signal)
				}
			case <-time.After(time.Second):
			}
		}
		if _, cerr := l.call(msg{Op: opExit}, cfg.Grace+cfg.ProofBound+5*time.Second); cerr != nil && err == nil {
			say("the guardian did not confirm its exit: %v", cerr)
		}
	}
	l.kill()
	if err != nil {
		rep = fallbackSweeper(cfg.Backend, name).terminate(os.Getpid(), nil, time.Now().Add(cfg.Grace), cfg.ProofBound, cfg.Stderr)
		if rep.ProvenEmpty && cfg.Backend.Name == BackendCgroup {
			removeRun(cfg.Backend, name, cfg.Stderr)
		}
	}
	return finishRun(cfg, e, rep)
}

// await waits until the command is done - its main process exited, or with
// UntilEmpty its whole tree finished - or the timeout passes, forwarding
// INT/TERM/HUP to every process in the container meanwhile. An error means the
// guardian is gone and the fallback must contain.
func (cfg RunConfig) await(ctx context.Context, l *link, sigs <-chan os.Signal, e *runEnd) error {
	var timeout <-chan time.Time
	if cfg.Timeout > 0 {
		t := time.NewTimer(cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// --until-empty: after the main process exited, the guardian is asked how
	// many processes are left, quickly at first, then at most every 100 ms.
	var probe <-chan time.Time
	step, said := time.Duration(0), false
	for {
		select {
		case n := <-l.notes:
			if n.Op != opExited || n.Group != groupWorker {
				continue
			}
			e.takeStatus(n.Code, n.Signal)
			if n.Code < 0 {
				// The shim died: the guardian has contained its tree already.
				cfg.say("%s", n.Err)
				return nil
			}
			if !cfg.UntilEmpty {
				return nil
			}
			probe = time.After(0)
		case <-probe:
			m, err := l.call(msg{Op: opProbe, Group: groupWorker}, 5*time.Second)
			if err != nil {
				cfg.say("asking the guardian what is left: %v; using main-process fallback", err)
				return errGuardianLost
			}
			if m.Live == 0 {
				return nil
			}
			if !said {
				cfg.say("the main process exited with status %d; waiting until the %d processes it left have finished (--until-empty)", e.code, m.Live)
				said = true
			}
			step = min(max(2*step, 5*time.Millisecond), 100*time.Millisecond)
			probe = time.After(step)
		case s := <-sigs:
			// The command decides what a signal means; we only make sure every
			// process in its container receives it.
			if _, err := l.call(msg{Op: opSignal, Signal: int(s.(syscall.Signal))}, 5*time.Second); err != nil {
				cfg.say("forwarding %v: %v", s, err)
			}
		case <-timeout:
			cfg.say("the command ran past --timeout %v; stopping it", cfg.Timeout)
			e.timedOut = true
			return nil
		case <-l.dead:
			cfg.say("detached guardian exited before reporting verified containment; using main-process fallback")
			return errGuardianLost
		case <-ctx.Done():
			return nil
		}
	}
}
