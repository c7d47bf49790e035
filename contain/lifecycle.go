package contain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/platform"
)

// host is the containment side of one supervised run: it owns the hold and
// worker groups and enforces the armed deadline. The lifecycle below (what to
// start when, what to report, which exit code) is the same on every platform;
// a host is how one kernel provides the groups. Two implementations exist: the
// guardian process behind a socketpair (unix, supervise_unix.go), which keeps
// containing if the supervisor dies, and job objects the supervisor holds
// itself (windows, host_windows.go), which the kernel kills when the
// supervisor dies.
type host interface {
	// notes delivers opExited (a group's main process ended) and opExpired
	// (the armed deadline fired and the worker group is to be contained).
	notes() <-chan msg
	// lost delivers, at most once, why the host can no longer vouch for the
	// containment; the run then contains everything itself (fallback).
	lost() <-chan string
	// arm installs deadline generation gen; until it succeeds the previous
	// deadline stays in force. errGuardianLost means the host is gone.
	arm(gen uint64, dl events.Deadline) error
	// start starts the gated worker with env added to its environment.
	start(env []string) error
	// contain tears a group down (graceful stop first unless noGrace) and
	// reports whether the kernel showed it empty. An error means the host
	// failed and the fallback must contain instead.
	contain(group string, noGrace bool) (Report, error)
	// release asks the hold to release its authority (unix: SIGTERM; windows:
	// CTRL_BREAK_EVENT to its console process group).
	release() error
	// finish contains the hold group (graceful stop first unless noGrace) and
	// anything else left, then ends the host; its report covers all of that.
	// The worker group is contained before, on its own (stop). An error means
	// the host failed and the fallback must contain instead.
	finish(noGrace bool) (Report, error)
	// fallback contains everything from the supervisor itself after the host
	// was lost or failed.
	fallback(grace, proof time.Duration, diag io.Writer) Report
	// close frees what the host holds in this process; every run ends with it.
	close()
}

// Group names, on the wire between supervisor and guardian and in messages.
const (
	groupHold   = "hold"
	groupWorker = "worker"
)

// errGuardianLost means the containment host died, froze or stopped answering
// (on unix the guardian; the job-object host has no such failure).
var errGuardianLost = errors.New("the guardian process is unavailable")

// errNoRelease means the hold could not be asked to release (windows: no
// console shares a console control event with it): its lease ages out by its
// TTL instead, and nobody waits for a release that cannot come.
var errNoRelease = errors.New("the hold could not be asked to release its lease")

type causeKind int

const (
	causeTerminal     causeKind = iota // the hold sent released/lost/uncertain/error
	causeInvalid                       // the stream broke the protocol: 70
	causeDoubt                         // authority stale, unusable or unarmable: 20
	causeExpired                       // the armed deadline fired: 20
	causeHoldEnded                     // the hold ended without a terminal event: 70
	causeWorkerExited                  // the worker's main process exited
	causeWorkerLost                    // the worker group's root (its shim) died: the worker's status is lost
	causeSignal                        // INT/TERM/HUP (windows: console control events) to the supervisor
	causeGuardianLost                  // the guardian died or stopped answering
	causeBlocked                       // this host stayed blocked past Config.AcquireTimeout: 11
)

// cause is why a run stops.
type cause struct {
	kind       causeKind
	msg        string        // one line for stderr
	ev         *events.Event // causeTerminal: the hold's terminal event
	sig        syscall.Signal
	workerCode int
	workerSig  int // causeWorkerExited: the signal that ended the worker, 0 if none
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
	host      host
	lines     chan lineMsg
	linesDone bool
	sigs      chan os.Signal
	readyDir  string
	readyFile string

	gen      uint64 // armed deadline generation; > 0 once authority started
	deadline events.Deadline
	holdGone <-chan time.Time // set when the hold's process exited

	gate       hostGate  // the interlock and the survivor record of this name
	acquireBy  time.Time // Config.AcquireTimeout as a moment; zero: no bound
	provenAll  bool      // finish saw every group proven empty
	saidProven bool      // the worker group's proof was said on stderr
	out        []byte    // print's buffer, kept so a renewal's line allocates nothing
}

// Supervise runs one supervised hold to the end and returns the exit code.
func Supervise(ctx context.Context, cfg Config) int {
	r := &run{cfg: cfg, diag: cfg.Stderr, stream: events.NewStream(events.Expect{Kind: cfg.Kind, Name: cfg.Name, Candidate: cfg.Candidate}),
		lines: make(chan lineMsg), sigs: make(chan os.Signal, 4), gate: hostGate{interlock: cfg.Interlock, survivors: cfg.Survivors, hostKey: cfg.HostKey}}
	if cfg.AcquireTimeout > 0 {
		r.acquireBy = time.Now().Add(cfg.AcquireTimeout)
	}
	// Signals are caught before anything starts, so none can kill the supervisor
	// half way and leave the containment to guess.
	stopSignals := catchSignals(r.sigs, cfg.Stderr)
	defer stopSignals()
	// Before anything of the run exists; let go of last, after the
	// guardian (which shares it) is reaped.
	if err := claimWorkerUser(cfg.Isolation.User); err != nil {
		r.say("%v", err)
		return ExitUsage
	}
	defer cfg.Isolation.release()
	// The interlock is let go last, once the guardian is reaped (cleanup):
	// the next run of this name on this host finds nothing of ours running.
	defer r.releaseInterlock()
	defer r.cleanup()
	// A name kept blocked by survivors of a failed containment does not even
	// campaign: a lease it cannot use would only keep it from another host.
	if c := r.waitUntilClear(ctx, r.gate.survivorsAlive, nil); c != nil {
		if c.msg != "" {
			r.say("%s", c.msg)
		}
		if c.kind == causeDoubt {
			return ExitSoftware
		}
		return r.exitCode(*c, nil)
	}
	if err := r.start(); err != nil {
		r.say("%v", err)
		if r.host != nil {
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
	for _, w := range r.cfg.Isolation.startWarnings() {
		r.say("warning: %s", w)
	}
	if err := prepareSupervisor(r.cfg, r.diag); err != nil {
		return err
	}
	var err error
	// The ready file sits alone in a fresh private directory: naming it tells the
	// worker nothing about any supervisor state.
	if r.readyDir, err = makeReadyDir(r.cfg.Isolation); err != nil {
		return fmt.Errorf("create the worker's ready directory: %w", err)
	}
	r.readyFile = filepath.Join(r.readyDir, "ready")

	evR, evW, err := eventChannel()
	if err != nil {
		return fmt.Errorf("create the hold's event channel: %w", err)
	}
	workerOut := os.Stderr
	if r.cfg.WorkerOutput == WorkerOutputInherit {
		workerOut = os.Stdout
	}
	if err := r.gate.open(); err != nil {
		return err
	}
	r.host, err = openHost(r.cfg, evW, workerOut, r.gate.shared())
	evW.Close()
	if err != nil {
		evR.Close()
		return err
	}
	go r.readLines(evR)
	return nil
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
		case n := <-r.host.notes():
			c = r.onNote(n)
		case s := <-r.sigs:
			c = &cause{kind: causeSignal, sig: s.(syscall.Signal)}
		case <-r.holdGone:
			c = &cause{kind: causeHoldEnded, msg: "the hold exited without a terminal event"}
		case why := <-r.host.lost():
			c = &cause{kind: causeGuardianLost, msg: why}
		case <-ctx.Done():
			c = &cause{kind: causeSignal, sig: syscall.SIGTERM}
		}
		if c != nil {
			return r.stop(*c)
		}
	}
}

func (r *run) onLine(lm lineMsg) *cause {
	ev, c := r.event(lm)
	if c != nil {
		return c
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

// event validates one line of the hold; a cause ends the run.
func (r *run) event(lm lineMsg) (events.Event, *cause) {
	if lm.err != nil {
		r.linesDone = true
		if errors.Is(lm.err, io.EOF) {
			return events.Event{}, &cause{kind: causeHoldEnded, msg: "the hold's event stream ended without a terminal event"}
		}
		c := causeFrom(lm.err)
		return events.Event{}, &c
	}
	ev, err := r.stream.Next(lm.line)
	if err != nil {
		c := causeFrom(err)
		return events.Event{}, &c
	}
	return ev, nil
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

// arm hands the next deadline generation to the host; until it accepts, the
// previous deadline stays in force.
func (r *run) arm(dl events.Deadline) error {
	if err := r.host.arm(r.gen+1, dl); err != nil {
		return err
	}
	r.gen++
	r.deadline = dl
	return nil
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
	// Taken after leader, not before the hold starts: the interlock is held by
	// the current leader's run for its whole tenure, and a candidate must be
	// able to campaign meanwhile. The wait is normally one teardown long; the
	// armed deadline keeps running through it, renewed by the hold's renewals
	// (heldBack), and the hold's loss ends it.
	auth := *ev.Authority
	if c := r.waitUntilClear(context.Background(), r.gate.blocked, r.heldBack(&auth)); c != nil {
		return c
	}
	if note := r.gate.takeNote(); note != "" {
		r.say("%s", note)
	}
	env := []string{"OCTOSTORE_FENCING_TERM=" + strconv.FormatUint(*ev.Term, 10), "OCTOSTORE_SUPERVISOR_READY_FILE=" + r.readyFile}
	if ev.FencingKey != "" {
		env = append(env, "OCTOSTORE_FENCING_KEY="+ev.FencingKey)
	}
	if err := r.host.start(env); err != nil {
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
	if err := r.stillFresh(auth); err != nil {
		return doubt("authority expired while the worker was launched: %v", err)
	}
	r.print(events.LineFor(ev))
	return nil
}

// waitUntilClear waits until check reports nothing blocking this host (see
// hostGate), saying each new reason once. Before the hold starts there is no
// host yet; after, the host's notes (expiry, worker exit) and loss end the
// wait as they end any other, and so do signals, ctx and
// Config.AcquireTimeout (causeBlocked). onLine, when set, takes the hold's
// lines meanwhile (heldBack), so a blocked run neither misses a renewal nor a
// loss.
func (r *run) waitUntilClear(ctx context.Context, check func() (string, error), onLine func(lineMsg) *cause) *cause {
	var notes <-chan msg
	var lost <-chan string
	var lines <-chan lineMsg
	if r.host != nil {
		notes, lost = r.host.notes(), r.host.lost()
	}
	if onLine != nil {
		lines = r.lines
	}
	var limit <-chan time.Time
	if !r.acquireBy.IsZero() {
		t := time.NewTimer(time.Until(r.acquireBy))
		defer t.Stop()
		limit = t.C
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	said := ""
	for {
		why, err := check()
		if err != nil {
			return &cause{kind: causeDoubt, msg: "this host could not be checked before the worker start: " + err.Error()}
		}
		if why == "" {
			return nil
		}
		if why != said {
			r.say("%s", why)
			said = why
		}
		select {
		case <-tick.C:
		case n := <-notes:
			if c := r.onNote(n); c != nil {
				return c
			}
		case lm := <-lines:
			if c := onLine(lm); c != nil {
				return c
			}
		case <-r.holdGone:
			return &cause{kind: causeHoldEnded, msg: "the hold exited without a terminal event"}
		case s := <-r.sigs:
			return &cause{kind: causeSignal, sig: s.(syscall.Signal)}
		case <-ctx.Done():
			return &cause{kind: causeSignal, sig: syscall.SIGTERM}
		case why := <-lost:
			return &cause{kind: causeGuardianLost, msg: why}
		case <-limit:
			return &cause{kind: causeBlocked, msg: fmt.Sprintf("gave up after --acquire-timeout %v: %s", r.cfg.AcquireTimeout, said)}
		}
	}
}

// releaseInterlock hands the interlock on once the run is over: explicitly
// when everything was proven contained, otherwise only by closing it (on unix
// the guardian's share then keeps it until the guardian is done).
func (r *run) releaseInterlock() {
	if err := r.gate.close(r.provenAll); err != nil {
		r.say("the interlock could not be released: %v", err)
	}
}

// awaitReady waits for the worker's ready file. Hold events queue meanwhile, as in
// the reference; worker exit, expiry, host loss and signals are still acted on.
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
		case n := <-r.host.notes():
			if c := r.onNote(n); c != nil {
				if c.kind == causeWorkerExited || c.kind == causeWorkerLost {
					c.kind, c.msg = causeInvalid, "worker exited before acknowledging application readiness"
				}
				return c
			}
		case s := <-r.sigs:
			return &cause{kind: causeSignal, sig: s.(syscall.Signal)}
		case why := <-r.host.lost():
			return &cause{kind: causeGuardianLost, msg: why}
		}
	}
}

func (r *run) renew(ev events.Event) *cause {
	a, c := r.rearm(ev)
	if c != nil {
		return c
	}
	r.pause("renewal-armed")
	// Never report a renewal that is already stale: a supervisor frozen after
	// the host accepted it may wake past the new deadline.
	if err := r.stillFresh(a); err != nil {
		return &cause{kind: causeDoubt, msg: "renewed authority expired before it could be reported: " + err.Error()}
	}
	r.print(events.LineFor(ev))
	return nil
}

// rearm arms the deadline of a renewal and returns its authority.
func (r *run) rearm(ev events.Event) (events.Authority, *cause) {
	a, err := ev.AuthorityOrDoubt()
	if err != nil {
		c := causeFrom(err)
		return a, &c
	}
	dl, err := r.plan(a)
	if err != nil {
		return a, &cause{kind: causeDoubt, msg: "renewed authority could not replace the active deadline: " + err.Error()}
	}
	r.pause("pre-renew-arm")
	if err := r.arm(dl); err != nil {
		if errors.Is(err, errGuardianLost) {
			return a, &cause{kind: causeGuardianLost, msg: err.Error()}
		}
		return a, &cause{kind: causeDoubt, msg: "renewed authority could not replace the active deadline: " + err.Error()}
	}
	return a, nil
}

// heldBack takes the hold's lines while an authority's worker waits for this
// host (launch): a renewal re-arms the deadline and becomes the authority the
// launch checks, unreported (no leader line is out yet), so the wait lasts
// as long as authority does; a terminal event or a broken stream ends the
// run as it would with the worker running.
func (r *run) heldBack(auth *events.Authority) func(lineMsg) *cause {
	return func(lm lineMsg) *cause {
		ev, c := r.event(lm)
		if c != nil {
			return c
		}
		if ev.Event != events.Renewed {
			return &cause{kind: causeTerminal, ev: &ev}
		}
		a, c := r.rearm(ev)
		if c != nil {
			return c
		}
		*auth = a
		return nil
	}
}

func (r *run) onNote(n msg) *cause {
	switch {
	case n.Op == opExpired:
		return &cause{kind: causeExpired, msg: "the authority deadline passed without a fresh renewal; the worker was contained"}
	case n.Op == opExited && n.Group == groupWorker:
		if n.Code < 0 {
			// The host contained the group when its root died; the
			// worker's own status went with the root.
			return &cause{kind: causeWorkerLost, msg: n.Err}
		}
		return &cause{kind: causeWorkerExited, workerCode: n.Code, workerSig: n.Signal}
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
	r.out = l.Append(r.out[:0])
	_, _ = r.cfg.Stdout.Write(r.out)
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
	wrep, err := r.host.contain(groupWorker, false)
	if err != nil {
		r.say("%v; using main-process fallback", err)
		return r.fallback(began)
	}
	term := c.ev
	if wrep.ProvenEmpty {
		// Said at once: the terminal line waits for the hold, and a run that
		// ends without one (exit 70) would otherwise never say it.
		r.sayProven(wrep)
	}
	if !wrep.ProvenEmpty {
		// Releasing now could hand the lease to a new leader while our worker
		// may still run. The hold is killed outright instead (a graceful stop
		// would make it release), so the lease can only age out by its TTL.
		r.say("the worker group could not be proven empty; the hold is killed without releasing the lease")
	} else if c.kind != causeTerminal && c.kind != causeHoldEnded && !r.linesDone {
		if err := r.host.release(); errors.Is(err, errNoRelease) {
			r.say("%v", err)
		} else if err != nil {
			r.say("%v; using main-process fallback", err)
			return r.fallback(began)
		} else {
			term = r.awaitRelease()
		}
	}
	// The hold group's teardown and the host's end are one request: the
	// terminal line waits for both, and a round trip less is time off it.
	hrep, err := r.host.finish(!wrep.ProvenEmpty)
	if err != nil {
		r.say("%v; using main-process fallback", err)
		return r.fallback(began)
	}
	rep := wrep
	rep.merge(hrep)
	rep.ProvenEmpty = wrep.ProvenEmpty && hrep.ProvenEmpty
	rep.DurationMs = time.Since(began).Milliseconds()
	return r.finish(c, term, rep)
}

// sayProven says, once per run and only once a worker may have started, that
// the worker's tree is proven gone.
func (r *run) sayProven(rep Report) {
	if r.gen > 0 && !r.saidProven {
		r.saidProven = true
		sayProvenEmpty(r.diag, rep)
	}
}

// awaitRelease reads what the hold says after it was asked to release, for at
// most the release budget, and returns its terminal event if it sent a valid one.
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
		case n := <-r.host.notes():
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
		// Before the interlock is let go (releaseInterlock runs after us).
		if note, err := r.gate.recordSurvivors(rep.Survivors); err != nil {
			r.say("the survivors could not be recorded, so this name is not kept blocked on this host: %v", err)
		} else if note != "" {
			r.say("%s", note)
		}
		r.say("terminal event withheld because containment could not be proved")
		return ExitSoftware
	}
	r.provenAll = true
	r.pause("terminal-contained")
	code := r.exitCode(c, term)
	printable := c.kind == causeTerminal || c.kind == causeSignal || c.kind == causeWorkerExited || c.kind == causeWorkerLost
	if printable && term != nil {
		l := events.LineFor(*term)
		l.Containment = &events.Containment{Backend: rep.Backend, ProvenEmpty: true, Killed: rep.Killed, DurationMs: rep.DurationMs, Limit: rep.Limit,
			CPUMicros: rep.CPUMicros, MemoryPeakBytes: rep.MemoryPeakBytes, OOMKills: rep.OOMKills, LimitHit: rep.LimitHit}
		if c.kind == causeWorkerExited {
			wc := c.workerCode
			l.WorkerExitCode = &wc
			l.Containment.Signal = c.workerSig
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
	case causeWorkerExited, causeWorkerLost:
		if term == nil || term.Event != events.Released {
			r.say("the hold did not confirm the release after the worker exited")
			return ExitSoftware
		}
		if c.kind == causeWorkerLost {
			return ExitStatusLost
		}
		if c.workerCode == 0 {
			return ExitOK
		}
		return ExitSoftware
	case causeDoubt, causeExpired:
		return ExitAuthority
	case causeBlocked:
		return ExitAcquireTimeout
	default:
		return ExitSoftware
	}
}

// fallback contains everything from the supervisor itself after the host died
// or stopped answering, and reports the authority as uncertain: nobody can vouch
// for the deadline any more.
func (r *run) fallback(began time.Time) int {
	rep := r.host.fallback(r.cfg.Grace, r.cfg.ProofBound, r.diag)
	rep.DurationMs = time.Since(began).Milliseconds()
	if rep.ProvenEmpty {
		r.sayProven(rep)
	}
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
	if r.host != nil {
		r.host.close()
	}
}
