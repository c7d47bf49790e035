//go:build unix

package contain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/platform"
)

type causeKind int

const (
	causeTerminal     causeKind = iota // the hold sent released/lost/uncertain/error
	causeInvalid                       // the stream broke the protocol: 70
	causeDoubt                         // authority stale, unusable or unarmable: 20
	causeExpired                       // the guardian's deadline fired: 20
	causeHoldEnded                     // the hold ended without a terminal event: 70
	causeWorkerExited                  // the worker's main process exited
	causeSignal                        // INT/TERM/HUP to the supervisor
	causeGuardianLost                  // the guardian died or stopped answering
)

// cause is why a run stops.
type cause struct {
	kind       causeKind
	msg        string        // one line for stderr
	ev         *events.Event // causeTerminal: the hold's terminal event
	sig        syscall.Signal
	workerCode int
}

func causeFrom(err error) cause {
	if errors.Is(err, events.ErrDoubt) {
		return cause{kind: causeDoubt, msg: err.Error()}
	}
	return cause{kind: causeInvalid, msg: err.Error()}
}

type lineMsg struct {
	line []byte
	err  error
}

// run is one supervised hold. All lifecycle state is here, in memory.
type run struct {
	cfg       Config
	diag      io.Writer
	stream    *events.Stream
	link      *link
	lines     chan lineMsg
	linesDone bool
	sigs      chan os.Signal
	readyDir  string
	readyFile string
	runName   string // cgroup backend: this run's directory below the parent

	gen           uint64 // armed deadline generation; > 0 once authority started
	deadline      events.Deadline
	holdGone      <-chan time.Time // set when the hold's process exited
	backstop      *platform.ContinuousTimer
	backstopFired chan struct{}
}

// Supervise runs one supervised hold to the end and returns the exit code.
func Supervise(ctx context.Context, cfg Config) int {
	r := &run{cfg: cfg, diag: cfg.Stderr, stream: events.NewStream(events.Expect{Kind: cfg.Kind, Name: cfg.Name, Candidate: cfg.Candidate}),
		lines: make(chan lineMsg), sigs: make(chan os.Signal, 4), backstopFired: make(chan struct{}, 1)}
	// Signals are caught before anything starts, so none can kill the supervisor
	// half way and leave the guardian to guess.
	signal.Notify(r.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(r.sigs)
	absorbSignals() // USR1/USR2/QUIT/PIPE must not kill us either
	defer r.cleanup()
	if err := r.start(); err != nil {
		r.say("%v", err)
		if r.link != nil {
			return r.stop(cause{kind: causeInvalid})
		}
		return ExitSoftware
	}
	return r.loop(ctx)
}

func (r *run) say(format string, args ...any) {
	fmt.Fprintf(r.diag, "octostore-supervisor: "+format+"\n", args...)
}

func (r *run) pause(point string) {
	if r.cfg.Pause != nil {
		r.cfg.Pause(point)
	}
}

func (r *run) start() error {
	r.say("containment: %s", r.cfg.Backend)
	sweepStale(r.cfg.Backend, r.cfg.ProofBound, r.diag)
	platform.ReserveThreads(reservedThreads)
	if err := platform.BecomeSubreaper(); err != nil {
		return err
	}
	if err := platform.SetNonDumpable(); err != nil {
		return err
	}
	var err error
	// The ready file sits alone in a fresh private directory: naming it tells the
	// worker nothing about any supervisor state.
	if r.readyDir, err = os.MkdirTemp("", "octostore-ready-"); err != nil {
		return fmt.Errorf("create the worker's ready directory: %w", err)
	}
	r.readyFile = filepath.Join(r.readyDir, "ready")
	if r.backstop, err = platform.NewContinuousTimer(); err != nil {
		return err
	}
	go func() {
		for r.backstop.Wait() == nil {
			r.backstopFired <- struct{}{}
		}
	}()

	evR, evW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create the event pipe: %w", err)
	}
	workerOut := os.Stderr
	if r.cfg.WorkerOutput == WorkerOutputInherit {
		workerOut = os.Stdout
	}
	r.link, r.runName, err = launchGuardian(msg{Argv: r.cfg.Hold, Env: r.cfg.Env,
		WorkerArgv: []string{r.cfg.Worker}, WorkerEnv: workerEnv(r.cfg.Env),
		Backend: &r.cfg.Backend, GraceMs: r.cfg.Grace.Milliseconds(), ProofMs: r.cfg.ProofBound.Milliseconds()},
		evW, workerOut)
	evW.Close()
	if err != nil {
		evR.Close()
		return err
	}
	go r.readLines(evR)
	return nil
}

// workerEnv is the supervisor's environment without the holder's secrets and
// without values the supervisor sets itself.
func workerEnv(env []string) []string {
	drop := append([]string{"OCTOSTORE_FENCING_TERM", "OCTOSTORE_SUPERVISOR_READY_FILE"}, SecretEnv...)
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	return out
}

func (r *run) readLines(f *os.File) {
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := events.ReadLine(br, events.MaxLineBytes)
		if err != nil {
			r.lines <- lineMsg{err: err}
			return
		}
		r.lines <- lineMsg{line: line}
	}
}

func (r *run) loop(ctx context.Context) int {
	for {
		var c *cause
		select {
		case lm := <-r.lines:
			c = r.onLine(lm)
		case n := <-r.link.notes:
			c = r.onNote(n)
		case s := <-r.sigs:
			c = &cause{kind: causeSignal, sig: s.(syscall.Signal)}
		case <-r.holdGone:
			c = &cause{kind: causeHoldEnded, msg: "the hold exited without a terminal event"}
		case <-r.link.dead:
			c = &cause{kind: causeGuardianLost, msg: "detached guardian exited before reporting verified containment; using main-process fallback"}
		case <-r.backstopFired:
			c = &cause{kind: causeGuardianLost, msg: "the guardian did not enforce the authority deadline; using main-process fallback"}
		case <-ctx.Done():
			c = &cause{kind: causeSignal, sig: syscall.SIGTERM}
		}
		if c != nil {
			return r.stop(*c)
		}
	}
}

func (r *run) onLine(lm lineMsg) *cause {
	if lm.err != nil {
		r.linesDone = true
		if errors.Is(lm.err, io.EOF) {
			return &cause{kind: causeHoldEnded, msg: "the hold's event stream ended without a terminal event"}
		}
		c := causeFrom(lm.err)
		return &c
	}
	ev, err := r.stream.Next(lm.line)
	if err != nil {
		c := causeFrom(err)
		return &c
	}
	switch {
	case ev.Event == events.Waiting:
		r.print(events.LineFor(ev))
		return nil
	case ev.StartsAuthority():
		return r.launch(ev)
	case ev.Event == events.Renewed:
		return r.renew(ev)
	default:
		return &cause{kind: causeTerminal, ev: &ev}
	}
}

func (r *run) clocks() (events.Clocks, error) {
	cont, err := platform.ContinuousMillis()
	return events.Clocks{WallMs: platform.WallMillis(), ContinuousMs: cont}, err
}

func (r *run) silenceCap() time.Duration {
	if r.cfg.Kind == events.Lock {
		return r.cfg.SilenceCap
	}
	return 0
}

// plan turns an authority event into a deadline on the receipt clocks.
func (r *run) plan(a events.Authority) (events.Deadline, error) {
	now, err := r.clocks()
	if err != nil {
		return events.Deadline{}, fmt.Errorf("%w: %w", events.ErrDoubt, err)
	}
	return events.Plan(a, now, r.cfg.Grace, r.silenceCap())
}

// arm hands the next deadline generation to the guardian; until it acknowledges,
// the previous deadline stays in force.
func (r *run) arm(dl events.Deadline) error {
	if _, err := r.link.call(msg{Op: opArm, Gen: r.gen + 1, FireMs: dl.FireMs, KillMs: dl.KillMs}, 2*time.Second); err != nil {
		return err
	}
	r.gen++
	r.deadline = dl
	// If the guardian is frozen or dead when this deadline passes, the supervisor
	// contains everything itself a little after the kill time.
	return r.backstop.Set(dl.KillMs + r.cfg.Grace.Milliseconds() + 500)
}

// stillFresh re-checks an authority against the clocks and the armed deadline.
func (r *run) stillFresh(a events.Authority) error {
	now, err := r.clocks()
	if err != nil {
		return err
	}
	if _, err := events.Fresh(a, now); err != nil {
		return err
	}
	if now.ContinuousMs >= r.deadline.FireMs {
		return errors.New("the authority deadline has passed")
	}
	return nil
}

func (r *run) launch(ev events.Event) *cause {
	doubt := func(format string, args ...any) *cause {
		return &cause{kind: causeDoubt, msg: fmt.Sprintf(format, args...)}
	}
	dl, err := r.plan(*ev.Authority)
	if err != nil {
		c := causeFrom(err)
		return &c
	}
	r.pause("pre-arm")
	if err := r.arm(dl); err != nil {
		if errors.Is(err, errGuardianLost) {
			return &cause{kind: causeGuardianLost, msg: err.Error()}
		}
		return doubt("authority could not be armed before worker start: %v", err)
	}
	r.pause("pre-start")
	if err := r.stillFresh(*ev.Authority); err != nil {
		return doubt("authority could not be armed before worker start: %v", err)
	}
	env := []string{"OCTOSTORE_FENCING_TERM=" + strconv.FormatUint(*ev.Term, 10), "OCTOSTORE_SUPERVISOR_READY_FILE=" + r.readyFile}
	if _, err := r.link.call(msg{Op: opStart, Env: env}, 15*time.Second); err != nil {
		if errors.Is(err, errGuardianLost) {
			return &cause{kind: causeGuardianLost, msg: err.Error()}
		}
		return doubt("worker could not be started: %v", err)
	}
	if r.cfg.RequireReady {
		if c := r.awaitReady(); c != nil {
			return c
		}
	}
	if err := r.stillFresh(*ev.Authority); err != nil {
		return doubt("authority expired while the worker was launched: %v", err)
	}
	r.print(events.LineFor(ev))
	return nil
}

// awaitReady waits for the worker's ready file. Hold events queue meanwhile, as in
// the reference; worker exit, expiry, guardian loss and signals are still acted on.
func (r *run) awaitReady() *cause {
	limit := time.NewTimer(r.cfg.ReadyTimeout)
	defer limit.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if _, err := os.Lstat(r.readyFile); err == nil {
				return nil
			}
		case <-limit.C:
			return &cause{kind: causeDoubt, msg: "worker process did not acknowledge application readiness"}
		case n := <-r.link.notes:
			if c := r.onNote(n); c != nil {
				if c.kind == causeWorkerExited {
					c.kind, c.msg = causeInvalid, "worker exited before acknowledging application readiness"
				}
				return c
			}
		case s := <-r.sigs:
			return &cause{kind: causeSignal, sig: s.(syscall.Signal)}
		case <-r.link.dead:
			return &cause{kind: causeGuardianLost, msg: "detached guardian exited before reporting verified containment; using main-process fallback"}
		case <-r.backstopFired:
			return &cause{kind: causeGuardianLost, msg: "the guardian did not enforce the authority deadline; using main-process fallback"}
		}
	}
}

func (r *run) renew(ev events.Event) *cause {
	a, err := ev.AuthorityOrDoubt()
	if err != nil {
		c := causeFrom(err)
		return &c
	}
	dl, err := r.plan(a)
	if err != nil {
		return &cause{kind: causeDoubt, msg: "renewed authority could not replace the active deadline: " + err.Error()}
	}
	r.pause("pre-renew-arm")
	if err := r.arm(dl); err != nil {
		if errors.Is(err, errGuardianLost) {
			return &cause{kind: causeGuardianLost, msg: err.Error()}
		}
		return &cause{kind: causeDoubt, msg: "renewed authority could not replace the active deadline: " + err.Error()}
	}
	r.pause("renewal-armed")
	// Never report a renewal that is already stale: a supervisor frozen after
	// the guardian acknowledged it may wake past the new deadline.
	if err := r.stillFresh(a); err != nil {
		return &cause{kind: causeDoubt, msg: "renewed authority expired before it could be reported: " + err.Error()}
	}
	r.print(events.LineFor(ev))
	return nil
}

func (r *run) onNote(n msg) *cause {
	switch {
	case n.Op == opExpired:
		return &cause{kind: causeExpired, msg: "the authority deadline passed without a fresh renewal; the worker was contained"}
	case n.Op == opExited && n.Group == groupWorker:
		if n.Code < 0 {
			return &cause{kind: causeInvalid, msg: n.Err}
		}
		return &cause{kind: causeWorkerExited, workerCode: n.Code}
	case n.Op == opExited && n.Group == groupHold:
		if n.Code < 0 {
			return &cause{kind: causeInvalid, msg: n.Err}
		}
		// Lines the hold wrote before exiting are still in the pipe; give the
		// reader a moment to deliver them (and the end of the stream) first.
		r.holdGone = time.After(250 * time.Millisecond)
	}
	return nil
}

func (r *run) print(l events.Line) {
	// One write per line; a failed write (stdout closed) must not stop teardown.
	_, _ = r.cfg.Stdout.Write(l.Encode())
}

// containGroup asks the guardian to tear a group down; noGrace skips the TERM
// phase and kills at once.
func (r *run) containGroup(group string, noGrace bool) (Report, error) {
	m, err := r.link.call(msg{Op: opContain, Group: group, NoGrace: noGrace}, r.cfg.Grace+r.cfg.ProofBound+5*time.Second)
	if err != nil {
		return Report{}, err
	}
	if m.Report == nil {
		return Report{}, fmt.Errorf("%w: containment reply without a report", errGuardianLost)
	}
	return *m.Report, nil
}

// stop is the one teardown every run ends in: the worker group is proven empty
// before the hold is asked to release, the hold group is proven empty next, and
// only then is a terminal line printed. Signals that arrive meanwhile are ignored:
// a second Ctrl-C cannot abort containment.
func (r *run) stop(c cause) int {
	if c.msg != "" {
		r.say("%s", c.msg)
	}
	began := time.Now()
	if c.kind == causeGuardianLost {
		return r.fallback(began)
	}
	wrep, err := r.containGroup(groupWorker, false)
	if err != nil {
		r.say("%v; using main-process fallback", err)
		return r.fallback(began)
	}
	term := c.ev
	if !wrep.ProvenEmpty {
		// Releasing now could hand the lease to a new leader while our worker
		// may still run. The hold is killed outright instead (a graceful TERM
		// would make it release), so the lease can only age out by its TTL.
		r.say("the worker group could not be proven empty; the hold is killed without releasing the lease")
	} else if c.kind != causeTerminal && c.kind != causeHoldEnded && !r.linesDone {
		if _, err := r.link.call(msg{Op: opRelease}, 2*time.Second); err != nil {
			r.say("%v; using main-process fallback", err)
			return r.fallback(began)
		}
		term = r.awaitRelease()
	}
	hrep, err := r.containGroup(groupHold, !wrep.ProvenEmpty)
	if err != nil {
		r.say("%v; using main-process fallback", err)
		return r.fallback(began)
	}
	if _, err := r.link.call(msg{Op: opExit}, r.cfg.Grace+r.cfg.ProofBound+5*time.Second); err != nil {
		r.say("the guardian did not confirm its exit: %v", err)
	}
	r.link.kill() // normally already reaped; bounded either way
	rep := wrep
	rep.merge(hrep)
	rep.ProvenEmpty = wrep.ProvenEmpty && hrep.ProvenEmpty
	rep.DurationMs = time.Since(began).Milliseconds()
	return r.finish(c, term, rep)
}

// awaitRelease reads what the hold says after SIGTERM, for at most the release
// budget, and returns its terminal event if it sent a valid one.
func (r *run) awaitRelease() *events.Event {
	limit := time.NewTimer(r.cfg.ReleaseBudget)
	defer limit.Stop()
	for {
		select {
		case lm := <-r.lines:
			if lm.err != nil {
				r.linesDone = true
				return nil
			}
			if ev, err := r.stream.Next(lm.line); err == nil && ev.Terminal() {
				return &ev
			}
		case n := <-r.link.notes:
			if n.Op == opExited && n.Group == groupHold {
				r.holdGone = time.After(250 * time.Millisecond)
			}
		case <-r.holdGone:
			return nil
		case <-limit.C:
			r.say("the hold did not confirm its release within %v", r.cfg.ReleaseBudget)
			return nil
		}
	}
}

// finish prints the terminal line when containment is proven and picks the exit code.
func (r *run) finish(c cause, term *events.Event, rep Report) int {
	if !rep.ProvenEmpty {
		for _, s := range rep.Survivors {
			r.say("survivor: pid %d state %s command %q", s.Pid, s.State, s.Command)
		}
		r.say("terminal event withheld because containment could not be proved")
		return ExitSoftware
	}
	r.pause("terminal-contained")
	code := r.exitCode(c, term)
	printable := c.kind == causeTerminal || c.kind == causeSignal || c.kind == causeWorkerExited
	if printable && term != nil {
		l := events.LineFor(*term)
		l.Containment = &events.Containment{Backend: rep.Backend, ProvenEmpty: true, Killed: rep.Killed, DurationMs: rep.DurationMs}
		if c.kind == causeWorkerExited {
			wc := c.workerCode
			l.WorkerExitCode = &wc
		}
		r.print(l)
	}
	return code
}

func (r *run) exitCode(c cause, term *events.Event) int {
	switch c.kind {
	case causeTerminal:
		switch term.Event {
		case events.Released:
			if r.gen == 0 {
				r.say("the hold released authority it never reported holding")
				return ExitSoftware
			}
			return ExitOK
		case events.Lost, events.Uncertain:
			return ExitAuthority
		default: // error
			if term.ReasonCode == "acquire_timeout" {
				return ExitAcquireTimeout
			}
			return ExitSoftware
		}
	case causeSignal:
		return 128 + int(c.sig)
	case causeWorkerExited:
		if c.workerCode == 0 && term != nil && term.Event == events.Released {
			return ExitOK
		}
		if term == nil || term.Event != events.Released {
			r.say("the hold did not confirm the release after the worker exited")
		}
		return ExitSoftware
	case causeDoubt, causeExpired:
		return ExitAuthority
	default:
		return ExitSoftware
	}
}

// fallback contains everything from the supervisor itself after the guardian died
// or stopped answering. The supervisor is a child subreaper, so the guardian's
// orphans - the shims and everything below them - are now its descendants.
func (r *run) fallback(began time.Time) int {
	r.link.kill()
	rep := fallbackSweeper(r.cfg.Backend, r.runName).terminate(os.Getpid(), nil, time.Now().Add(r.cfg.Grace), r.cfg.ProofBound, r.diag)
	if rep.ProvenEmpty && r.cfg.Backend.Name == BackendCgroup {
		removeRun(r.cfg.Backend, r.runName, r.diag)
	}
	rep.DurationMs = time.Since(began).Milliseconds()
	if !rep.ProvenEmpty {
		return r.finish(cause{kind: causeGuardianLost}, nil, rep)
	}
	if r.gen == 0 {
		return ExitSoftware
	}
	// Authority was active and nobody can vouch for the deadline any more.
	ev := events.Event{Sequence: r.stream.LastSequence() + 1, Event: events.Uncertain, Kind: r.cfg.Kind, Name: r.cfg.Name, ReasonCode: "guardian_lost"}
	if r.cfg.Kind == events.Election {
		cand := r.cfg.Candidate
		ev.CandidateID = &cand
	}
	term, _ := r.stream.ActiveTerm()
	ev.Term = &term
	r.finish(cause{kind: causeTerminal}, &ev, rep)
	return ExitAuthority
}

func (r *run) cleanup() {
	if r.readyDir != "" {
		os.RemoveAll(r.readyDir)
	}
	if r.backstop != nil {
		r.backstop.Close()
	}
}

// nameRun names the run's cgroup after the supervisor and the guardian (pid and
// start time each), which is how a later sweep proves a run abandoned.
func nameRun(guardian int) (string, error) {
	pr := platform.NewProcReader()
	sup, err := pr.Stat(os.Getpid())
	if err != nil {
		return "", err
	}
	g, err := pr.Stat(guardian)
	if err != nil {
		return "", fmt.Errorf("the guardian is already gone: %w", err)
	}
	return runName(sup, g), nil
}

// fallbackSweeper is the supervisor's own teardown when the guardian is gone: the
// whole run's cgroup (recursively) when there is one, then every descendant.
func fallbackSweeper(b Backend, name string) *sweeper {
	s := newSweeper()
	if b.Name == BackendCgroup {
		s.backend = BackendCgroup
		s.container = func(proof time.Duration) ([]int, bool, error) { return killRun(b, name, proof) }
	}
	return s
}

// startupSweepBound keeps a start from waiting out the full proof bound on an
// abandoned run that cannot be emptied (a task stuck in uninterruptible sleep):
// such a run is reported and left to `sweep`, which waits the full bound.
const startupSweepBound = 200 * time.Millisecond

// sweepStale cleans up after supervisors that died with their guardians.
func sweepStale(b Backend, _ time.Duration, diag io.Writer) {
	runs, err := SweepStale(b, false, startupSweepBound)
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: sweeping abandoned runs: %v\n", err)
	}
	for _, s := range runs {
		fmt.Fprintf(diag, "octostore-supervisor: swept abandoned run %s: %d processes, proven empty %v, removed %v\n", s.Dir, s.Processes, s.ProvenEmpty, s.Removed)
	}
}

// launchGuardian starts the guardian in its own session and hands it the run: the
// hold's event pipe (write end), where the worker's output goes, and init. The
// returned link is live even on error when the guardian started, so the caller
// can still contain whatever it began.
func launchGuardian(init msg, events, workerOut *os.File) (*link, string, error) {
	mine, theirs, err := socketpair()
	if err != nil {
		return nil, "", err
	}
	defer theirs.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	if events == nil {
		events = devnull
	}
	l := newLink()
	reaper(&l.mu, l.onReapedLocked)
	l.mu.Lock() // registered before the reaper can see it exit
	l.pid, err = startHelper(GuardianArg, []*os.File{devnull, devnull, os.Stderr, theirs, events, workerOut}, true)
	l.mu.Unlock()
	if err != nil {
		return nil, "", fmt.Errorf("detached guardian could not be armed: %w", err)
	}
	l.attach(newConn(mine))
	name, err := nameRun(l.pid)
	if err != nil {
		return l, "", err
	}
	init.Op, init.RunName = opInit, name
	if _, err := l.call(init, 10*time.Second); err != nil {
		return l, name, fmt.Errorf("the guardian could not start the groups: %w", err)
	}
	return l, name, nil
}
