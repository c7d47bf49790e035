//go:build unix

package contain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/platform"
)

// catchSignals routes INT/TERM/HUP to sigs and keeps every other catchable
// signal from killing the supervisor; the returned func stops the routing.
func catchSignals(sigs chan os.Signal, _ io.Writer) func() {
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	absorbSignals() // USR1/USR2/QUIT/PIPE must not kill us either
	return func() { signal.Stop(sigs) }
}

// prepareSupervisor cleans up after dead runs and sets the process attributes
// the guardian design relies on, before anything of this run starts.
func prepareSupervisor(cfg Config, diag io.Writer) error {
	sweepStale(cfg.Backend, cfg.ProofBound, diag)
	reserveThreads()
	if err := errors.Join(adoptInherited(), platform.BecomeSubreaper()); err != nil {
		return err
	}
	return platform.SetNonDumpable()
}

// eventChannel is the hold's stdout (w) and the supervisor's end of it (r): a
// stream socketpair, not a pipe. A pipe can be reopened through
// /proc/<hold>/fd/1 by any process allowed to look at the hold (a same-user
// worker when the hold is dumpable, as a hold command of the user's choosing
// is); a socket cannot be opened that way at all (ENXIO), so nobody can write
// events into the channel but the processes that inherited it.
func eventChannel() (r, w *os.File, err error) {
	if r, w, err = socketpair(); err != nil {
		return nil, nil, err
	}
	// Events flow one way: the hold reads end-of-file on its stdout, never
	// anything from us.
	// Through WithFd, not Fd: Fd would put r back into blocking mode.
	if err := platform.WithFd(r, func(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) }); err != nil {
		r.Close()
		w.Close()
		return nil, nil, fmt.Errorf("shutdown the event channel's return direction: %w", err)
	}
	return r, w, nil
}

// guardianHost is the unix host: a guardian process in its own session owns the
// groups and the armed deadline and keeps enforcing it if the supervisor dies.
// The supervisor backs it up with a timer of its own a little after each kill
// time, in case the guardian is frozen or dead when the deadline passes.
type guardianHost struct {
	cfg           Config
	link          *link
	runName       string // cgroup backend: this run's directory below the parent
	backstop      *platform.ContinuousTimer
	backstopFired chan struct{}
	lostCh        chan string
	// exited: the guardian confirmed its orderly exit (everything proven
	// empty), so close reaps it; until then only the guardian may end itself.
	exited bool
}

// openHost starts the guardian with the hold's event pipe and the worker's
// output. The host is returned even on error once the guardian started, so the
// caller can still contain whatever it began.
func openHost(cfg Config, events, workerOut *os.File, keep []*os.File) (host, error) {
	h := &guardianHost{cfg: cfg, backstopFired: make(chan struct{}, 1), lostCh: make(chan string, 1)}
	var err error
	if h.backstop, err = platform.NewContinuousTimer(); err != nil {
		return nil, err
	}
	go func() {
		for h.backstop.Wait() == nil {
			h.backstopFired <- struct{}{}
		}
	}()
	argv, env, holdIn, err := holdLaunch(cfg)
	if err != nil {
		h.backstop.Close()
		return nil, err
	}
	if holdIn != nil {
		defer holdIn.Close()
	}
	keep = append(keep, cfg.Isolation.kept()...)
	h.link, h.runName, err = launchGuardian(msg{Argv: argv, Env: env,
		WorkerArgv: []string{cfg.Worker}, WorkerEnv: cfg.Isolation.workerEnviron(workerEnv(cfg.Env)), Isolation: &cfg.Isolation,
		Backend: &cfg.Backend, GraceMs: cfg.Grace.Milliseconds(), ProofMs: cfg.ProofBound.Milliseconds(), Stats: cfg.Backend.Limited},
		holdIn, events, workerOut, keep, holdStart{embedded: cfg.EmbeddedHold, light: cfg.LightHold, image: cfg.holdImage})
	if h.link == nil {
		h.backstop.Close()
		return nil, err
	}
	go func() {
		select {
		case <-h.link.dead:
			h.lostCh <- "detached guardian exited before reporting verified containment; using main-process fallback"
		case <-h.link.stopped:
			h.lostCh <- "the guardian was stopped and can enforce nothing; using main-process fallback"
		case <-h.backstopFired:
			h.lostCh <- "the guardian did not enforce the authority deadline; using main-process fallback"
		}
	}()
	return h, err
}

// holdLaunch is how the hold is started. The embedded hold is this binary,
// named by selfExe so that its shim starts it from its own image (helperImage:
// non-dumpable from its first instruction). Every hold, an explicit one too,
// gets the bearer token on its stdin (tokenHandover, OCTOSTORE_TOKEN_FILE=-,
// which upstream's client and ours read), a pipe that holds nothing else,
// and never in its environment, where /proc/<pid>/environ shows it to every
// process of the user for as long as the hold runs.
func holdLaunch(cfg Config) (argv, env []string, stdin *os.File, err error) {
	argv = cfg.Hold
	if cfg.EmbeddedHold {
		exe, err := selfExe()
		if err != nil {
			return nil, nil, nil, err
		}
		argv = append([]string{exe}, cfg.Hold[1:]...)
	}
	env, token := tokenHandover(cfg.Env)
	if token == "" {
		return argv, env, nil, nil
	}
	// The whole token must fit the pipe: nobody reads it before the hold runs.
	if len(token) > maxHandedToken {
		return nil, nil, nil, fmt.Errorf("OCTOSTORE_TOKEN is longer than %d bytes; put it in a file named by OCTOSTORE_TOKEN_FILE", maxHandedToken)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create the token pipe: %w", err)
	}
	_, err = w.WriteString(token)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, nil, nil, fmt.Errorf("hand the bearer token over: %w", err)
	}
	return argv, env, r, nil
}

// maxHandedToken stays below the smallest pipe buffer (one page on the
// oldest kernels).
const maxHandedToken = 4096

func (h *guardianHost) notes() <-chan msg   { return h.link.notes }
func (h *guardianHost) lost() <-chan string { return h.lostCh }

func (h *guardianHost) arm(gen uint64, dl events.Deadline) error {
	if _, err := h.link.call(msg{Op: opArm, Gen: gen, FireMs: dl.FireMs, KillMs: dl.KillMs}, 2*time.Second); err != nil {
		return err
	}
	// If the guardian is frozen or dead when this deadline passes, the supervisor
	// contains everything itself a little after the kill time.
	return h.backstop.Set(dl.KillMs + h.cfg.Grace.Milliseconds() + 500)
}

func (h *guardianHost) start(env []string) error {
	_, err := h.link.call(msg{Op: opStart, Env: env}, 15*time.Second)
	return err
}

// contain asks the guardian to tear a group down; noGrace skips the TERM phase
// and kills at once.
func (h *guardianHost) contain(group string, noGrace bool) (Report, error) {
	return h.prove(msg{Op: opContain, Group: group, NoGrace: noGrace})
}

// prove makes a containment request (contain, exit) and returns the report
// its reply must carry: a reply without one proves nothing.
func (h *guardianHost) prove(req msg) (Report, error) {
	m, err := h.link.call(req, h.cfg.Grace+h.cfg.ProofBound+5*time.Second)
	if err == nil && m.Report == nil {
		err = fmt.Errorf("%w: %s reply without a report", errGuardianLost, req.Op)
	}
	if err != nil {
		return Report{}, err
	}
	return *m.Report, nil
}

// release has the guardian SIGTERM the hold's own process so it can release.
func (h *guardianHost) release() error {
	_, err := h.link.call(msg{Op: opRelease}, 2*time.Second)
	return err
}

// finish has the guardian contain the hold group and what else is left below
// it, and end. Its reply is the last part of the proof, so the terminal line
// may follow at once; the guardian, which runs nothing any more, is reaped by
// close, before the supervisor itself ends. That saves a run's terminal line
// the guardian's process exit (several milliseconds: a dozen threads and
// their mappings).
func (h *guardianHost) finish(noGrace bool) (Report, error) {
	rep, err := h.prove(msg{Op: opExit, NoGrace: noGrace})
	if err != nil {
		return rep, fmt.Errorf("the guardian did not confirm its exit: %w", err)
	}
	h.exited = true
	return rep, nil
}

// fallback contains everything from the supervisor itself after the guardian died
// or stopped answering. The supervisor is a child subreaper, so the guardian's
// orphans - the shims and everything below them - are now its descendants.
func (h *guardianHost) fallback(grace, proof time.Duration, diag io.Writer) Report {
	h.link.kill()
	rep := fallbackSweeper(h.cfg.Backend, h.runName).terminate(os.Getpid(), nil, time.Now().Add(grace), proof, diag)
	if rep.ProvenEmpty && h.cfg.Backend.Name == BackendCgroup {
		removeRun(h.cfg.Backend, h.runName, diag)
	}
	return rep
}

func (h *guardianHost) close() {
	if h.exited {
		h.link.kill() // normally already reaped; bounded either way
	}
	h.backstop.Close()
}

// A run's cgroups are <parent>/run-<supervisor pid>.<start>-<guardian pid>.<start>
// with one leaf per group. The name carries both owners' identities (pid plus
// start time) so that a later sweep can tell, without any state file, whether
// either of them is still alive.
const runPrefix = "run-"

func runName(sup, guardian platform.Proc) string {
	return fmt.Sprintf("%s%d.%d-%d.%d", runPrefix, sup.Pid, sup.StartTicks, guardian.Pid, guardian.StartTicks)
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
// whole run's cgroup (recursively) when there is one, then every descendant,
// and on macOS the guardian's session too (followRun; a no-op on Linux, where
// the supervisor is a subreaper and the descendants are the whole run).
func fallbackSweeper(b Backend, name string) *sweeper {
	s := newSweeper()
	if b.Name == BackendCgroup {
		s.backend = BackendCgroup
		s.container = func(proof time.Duration) ([]int, bool, error) { return killRun(b, name, proof) }
	}
	s.followRun(name)
	return s
}

// startupSweepBound keeps a start from waiting out the full proof bound on an
// abandoned run that cannot be emptied (a task stuck in uninterruptible sleep):
// such a run is marked, said once and left to `sweep`, which waits the full
// bound; later starts only look whether it has emptied since.
const startupSweepBound = 200 * time.Millisecond

// sweepStale cleans up after supervisors that died with their guardians.
func sweepStale(b Backend, _ time.Duration, diag io.Writer) {
	runs, err := sweepRuns(b, sweepStartup, startupSweepBound)
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: sweeping abandoned runs: %v\n", err)
	}
	swept := false
	for _, s := range runs {
		swept = swept || !s.NotOurs
		switch {
		case s.NotOurs:
			// Said at every start it is there: nothing else will remove it.
			fmt.Fprintf(diag, "octostore-supervisor: %s is %s: left alone (%d processes; no sweep of ours kills or removes it)\n", s.Dir, s.NotOursWhy(), s.Processes)
		case s.ProvenEmpty:
			fmt.Fprintf(diag, "octostore-supervisor: swept abandoned run %s: %d processes, proven empty true, removed %v\n", s.Dir, s.Processes, s.Removed)
		case s.MarkErr != "":
			fmt.Fprintf(diag, "octostore-supervisor: abandoned run %s still holds %d processes after cgroup.kill and could not be marked (%s), so every start tries it again; `octostore-supervisor sweep` waits for it and names what is left\n", s.Dir, s.Processes, s.MarkErr)
		case s.UnprovenSince != "":
			fmt.Fprintf(diag, "octostore-supervisor: abandoned run %s still holds %d processes after cgroup.kill (stuck in the kernel?); starts no longer wait for it: `octostore-supervisor sweep` waits for it and names what is left, `octostore-supervisor doctor` lists such runs\n", s.Dir, s.Processes)
		}
	}
	if swept {
		// Each abandoned run swept leaves about 19 KB of garbage (measured:
		// 48 runs, 0.9 MB), and pages the heap touched stay this process's
		// until the runtime's scavenger returns them, which it had not done
		// four minutes in. The supervisor lives as long as its run, so this
		// one start gives them back now: a collection and an madvise
		// (0.4-3.4 ms measured on a 1 MB heap), only after a crash left runs
		// behind.
		debug.FreeOSMemory()
	}
}

// launchGuardian starts the guardian in its own session and hands it the run: the
// hold's stdin (nil: /dev/null), the hold's event channel (write end), where the
// worker's output goes, and init; with the embedded hold, also the image it
// starts from when the guardian runs the lean helper image (helperImage). The
// returned link is live even on error when the guardian started, so the caller
// can still contain whatever it began.
func launchGuardian(init msg, holdIn, events, workerOut *os.File, keep []*os.File, hold holdStart) (*link, string, error) {
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
	if holdIn == nil {
		holdIn = devnull
	}
	img, err := helperImage(os.Stderr, hold)
	if err != nil {
		return nil, "", fmt.Errorf("detached guardian could not be armed: %w", err)
	}
	defer img.release()
	l := newLink()
	reaper(&l.mu, l.onReapedLocked)
	l.mu.Lock() // registered before the reaper can see it exit
	files := []*os.File{holdIn, devnull, os.Stderr, theirs, events, workerOut}
	files = append(files, keep...) // fdInterlock onwards
	init.EmbeddedHold = hold.embedded
	if img.hold != nil && hold.embedded {
		init.HoldImageFd = len(files)
		files = append(files, img.hold)
	}
	l.pid, err = startHelper(img.guardian, GuardianArg, files, true)
	l.mu.Unlock()
	if err != nil {
		return nil, "", fmt.Errorf("detached guardian could not be armed: %w", err)
	}
	l.watchStop(l.pid)
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
