package contain

import (
	"context"
	"os"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Run starts cfg.Argv in a fresh job object (born inside, KILL_ON_JOB_CLOSE,
// breakaway off) as the root of a new console process group, forwards the
// supervisor's console control events to that group as CTRL_BREAK_EVENT, and
// when the main process exits (or the timeout passes) stops everything left in
// the job (CTRL_BREAK_EVENT, grace, TerminateJobObject) and proves it empty from
// the job's accounting. It returns the command's exit status, or 70 when
// emptiness could not be proven. If the supervisor itself is killed, the kernel
// kills the job with its last handle.
func Run(ctx context.Context, cfg RunConfig) int {
	say := cfg.say
	sigs := make(chan os.Signal, 4)
	stopSignals := catchSignals(sigs, cfg.Stderr)
	defer stopSignals()
	say("containment: %s", cfg.Backend)

	e := runEnd{code: ExitSoftware, began: time.Now()}
	g, err := newJobGroup(groupWorker, workerJobLimits(cfg.Backend))
	if err != nil {
		say("%v", err)
		return ExitSoftware
	}
	defer g.close()
	if !g.job.LimitsVerified() {
		say("this kernel returns no job limits to read back (Wine): KILL_ON_JOB_CLOSE and breakaway off are set but unverified")
	}
	exited := make(chan int, 1)
	g.mu.Lock()
	err = g.startLocked(platform.ProcSpec{Argv: cfg.Argv, Env: cfg.Env, Stdout: os.Stdout, Stderr: os.Stderr},
		func(code int) { exited <- code })
	g.mu.Unlock()
	if err != nil {
		say("%v", err)
		e.stopped = time.Now()
		return finishRun(cfg, e, g.teardown(time.Now(), cfg.ProofBound, cfg.Stderr))
	}
	var timeout <-chan time.Time
	if cfg.Timeout > 0 {
		t := time.NewTimer(cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// --until-empty: once the main process exited, the job's accounting is
	// watched until no process is left in it.
	var emptied chan error
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
wait:
	for {
		select {
		case code := <-exited:
			e.takeStatus(code, 0)
			if !cfg.UntilEmpty {
				break wait
			}
			emptied = make(chan error, 1)
			go func() { emptied <- g.job.WaitEmpty(waitCtx) }()
		case err := <-emptied:
			if err != nil {
				say("waiting for the command's processes to finish: %v", err)
			}
			break wait
		case s := <-sigs:
			// The command decides what an interrupt means. Its group cannot
			// receive CTRL_C_EVENT (Windows disables it in a new group), so
			// every event is forwarded as CTRL_BREAK_EVENT.
			if err := platform.CtrlBreak(g.proc.Pid); err != nil {
				say("forwarding %v: %v", s, err)
			}
		case <-timeout:
			say("the command ran past --timeout %v; stopping it", cfg.Timeout)
			e.timedOut = true
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	stopWaiting()
	e.stopped = time.Now()
	rep := g.teardown(time.Now().Add(cfg.Grace), cfg.ProofBound, cfg.Stderr)
	if !e.known {
		// The main process died in the teardown: its status is the command's.
		if c, ok := g.exitStatus(time.Second); ok {
			e.takeStatus(c, 0)
		}
	}
	return finishRun(cfg, e, rep)
}
