//go:build unix

package contain

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/platform"
)

// guardian owns the containers and the armed deadline. It runs in its own session
// so a signal to the caller's process group cannot reach it, and it is the
// supervisor's only child: if the supervisor dies its socket reads EOF and the
// guardian contains everything on its own clock.
type guardian struct {
	main       *conn
	supervisor int // our parent; another parent later means it died
	grace      time.Duration
	proof      time.Duration
	stats      bool // init.Stats

	mu     sync.Mutex // held by the reaper around each wait; see signalShim
	groups map[string]*shimGroup

	armedDeadline
	timer *platform.ContinuousTimer

	backend Backend
	cg      *cgroupRun // cgroup backend: the run's leaves, one per group

	relay *outputRelay // a --worker-user worker's output (relayWorkerOutput)
}

// shimGroup is a protected group and the process that roots it: a shim, or,
// for the embedded hold, the hold itself (inproc, HoldRootMain).
type shimGroup struct {
	name    string
	pid     int
	inproc  bool            // the root is the group's program (the embedded hold)
	status  unix.WaitStatus // the root's, once reaped (gone closed)
	conn    *conn
	in      <-chan msg
	gone    chan struct{} // closed when the shim has been reaped
	started bool          // the group's program runs (or ran)
	closed  bool          // contained, shim killed: nothing may start here again
	tried   bool          // a teardown ran to its proof bound (report says what survived)
	exitFwd bool          // the program's exit was forwarded to the supervisor
	exit    *msg          // the program's exit report, taken during a teardown
	report  Report
	fam     *family        // macOS: the group followed beyond parent links; nil on Linux
	helper  *waitingHelper // the gated worker's waiting helper: we start the worker through it
}

// GuardianMain is the guardian process. Descriptors: 0 the hold's stdin, 3 the
// supervisor's socket, 4 the event channel's write end (the hold's stdout), 5
// the worker's stdout.
func GuardianMain() int {
	diag := os.Stderr
	reserveThreads()
	if err := errors.Join(adoptInherited(0), platform.BecomeSubreaper()); err != nil {
		fmt.Fprintf(diag, "octostore-supervisor guardian: %v\n", err)
		return ExitSoftware
	}
	_ = platform.SetNonDumpable()
	absorbSignals()

	ctl, err := inheritedConn()
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor guardian: %v\n", err)
		return ExitSoftware
	}
	g := &guardian{main: ctl, supervisor: os.Getppid(), groups: map[string]*shimGroup{}}
	reaper(&g.mu, func(pid int, ws unix.WaitStatus) {
		for _, grp := range g.groups {
			if grp.pid == pid {
				grp.status = ws
				close(grp.gone)
			}
		}
	})
	init, err := g.main.recv()
	if err != nil || init.Op != opInit {
		fmt.Fprintf(diag, "octostore-supervisor guardian: no start request: %v\n", err)
		return ExitSoftware
	}
	g.grace = time.Duration(init.GraceMs) * time.Millisecond
	g.proof = time.Duration(init.ProofMs) * time.Millisecond
	g.stats = init.Stats
	g.backend = Backend{Name: BackendProcessGroup}
	if init.Backend != nil {
		g.backend = *init.Backend
	}
	if g.timer, err = platform.NewContinuousTimer(); err != nil {
		_ = g.main.send(msg{Op: opReady, Reply: true, ID: init.ID, Err: err.Error()})
		return ExitSoftware
	}
	if err := g.startGroups(init); err != nil {
		_ = g.main.send(msg{Op: opReady, Reply: true, ID: init.ID, Err: err.Error()})
		g.containAll(false)
		return ExitSoftware
	}
	_ = g.main.send(msg{Op: opReady, Reply: true, ID: init.ID})
	return g.loop()
}

func (g *guardian) startGroups(init msg) error {
	// Closed through the *os.File: a raw close would leave its finalizer to close
	// whatever descriptor later reuses the number.
	events := os.NewFile(fdOut, "events")
	out := os.NewFile(fdErr, "worker-out")
	defer events.Close() // only the hold may hold the event pipe open
	defer out.Close()
	defer os.Stdin.Close() // the hold's stdin: it may hold the bearer token
	groups := []string{groupWorker}
	if len(init.Argv) > 0 {
		groups = append(groups, groupHold)
	}
	if g.backend.Name == BackendCgroup {
		cg, err := createRun(g.backend, init.RunName, groups)
		if err != nil {
			return err
		}
		g.cg = cg
		if cg.markErr != nil {
			// The run is contained as ever; only a sweep after this
			// supervisor and guardian both died would leave it alone.
			fmt.Fprintf(os.Stderr, "octostore-supervisor guardian: %v: should this supervisor and its guardian both die, no sweep will kill what is left in the run (sweeps kill only marked runs)\n", cg.markErr)
		}
	}
	var hold *shimGroup
	if len(init.Argv) > 0 {
		var err error
		if hold, err = g.launchHold(init, events); err != nil {
			return err
		}
	}
	events.Close()
	os.Stdin.Close()
	worker, err := g.launchWorker(init, out)
	if err != nil {
		return err
	}
	// Both groups were launched before either answered: the worker's group
	// (its pre-start helper and fence among them) gets ready while the hold
	// starts and asks for authority, not after.
	if hold != nil {
		if err := hold.awaitReady(); err != nil {
			return err
		}
		hold.started = true
	}
	if err := worker.awaitReady(); err != nil {
		return err
	}
	worker.started = init.Ungated // run mode has no authority: the worker starts at once
	return nil
}

// launchHold starts the hold's group with the event channel as its stdout:
// under a shim, or the embedded hold as its own root.
func (g *guardian) launchHold(init msg, events *os.File) (*shimGroup, error) {
	if !init.EmbeddedHold {
		return g.spawnShim(groupRoot{name: groupHold, in: os.Stdin, out: events, errf: os.Stderr}, msg{Op: opInit, Argv: init.Argv, Env: init.Env})
	}
	// The supervisor's binary when we run the lean helper image: the
	// embedded hold is there, not in ours.
	var image *os.File
	if init.HoldImageFd != 0 {
		image = os.NewFile(uintptr(init.HoldImageFd), "embedded-hold-image")
		defer image.Close()
	}
	return g.spawnHoldRoot(events, init.Argv, init.Env, image)
}

// launchWorker starts the worker's group with out as its output (relayed for
// a --worker-user worker), and a gated worker's waiting helper with its
// start channel ours.
func (g *guardian) launchWorker(init msg, out *os.File) (*shimGroup, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	wout, werr, relay, err := relayWorkerOutput(init.Isolation, out, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("relay the worker's output: %w", err)
	}
	g.relay = relay
	defer relay.closeWriters()
	worker := groupRoot{name: groupWorker, in: devnull, out: wout, errf: werr}
	if !init.Ungated && init.Isolation.waitsAhead() {
		if worker.helper, err = newWaitingHelper(); err != nil {
			return nil, err
		}
		defer worker.helper.peer.Close()
	}
	return g.spawnShim(worker, msg{Op: opInit, Gated: !init.Ungated, Argv: init.WorkerArgv, Env: init.WorkerEnv,
		Isolation: init.Isolation, NoNewPrivs: init.NoNewPrivs})
}

// leafOf is the group's cgroup leaf, nil under the process-group backend.
func (g *guardian) leafOf(grp *shimGroup) *leaf {
	if g.cg == nil {
		return nil
	}
	return g.cg.leaves[grp.name]
}

// spawnShim starts a group's shim; root.in becomes its program's stdin.
func (g *guardian) spawnShim(root groupRoot, init msg) (*shimGroup, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	root.exe, root.argv, root.env = exe, []string{"octostore-supervisor", ShimArg}, helperEnv()
	return g.spawnRoot(root, init)
}

// spawnHoldRoot starts the embedded hold as the root of the hold group
// (HoldRootMain): image (the hold image, or the supervisor's binary for an
// etcd hold: helperImage), or argv[0] where the helpers run the supervisor's
// binary too, with the hold's arguments and environment.
func (g *guardian) spawnHoldRoot(events *os.File, argv, env []string, image *os.File) (*shimGroup, error) {
	exe := argv[0]
	if image != nil {
		// Exec'd through our own descriptor: the very file the supervisor
		// opened, whatever its path names meanwhile.
		exe = "/proc/self/fd/" + strconv.Itoa(int(image.Fd()))
	}
	// argv is the supervisor's [binary, HoldArg, hold arguments...]; the root
	// takes HoldRootArg in HoldArg's place. Our environment comes first: the
	// first of two equal names is the one Go reads.
	root := groupRoot{name: groupHold, exe: exe, argv: append([]string{argv[0], HoldRootArg}, argv[2:]...),
		env: append(helperEnv(), env...), inproc: true, in: os.Stdin, out: events, errf: os.Stderr}
	return g.spawnRoot(root, msg{Op: opInit})
}

// groupRoot is the process a group is rooted at and how it is started: in
// becomes its program's stdin, out and errf its stdout and stderr.
type groupRoot struct {
	name          string
	exe           string
	argv          []string
	env           []string
	inproc        bool
	in, out, errf *os.File
	// The gated worker's waiting helper, whose start channel's peer the
	// shim passes on (StartFd).
	helper *waitingHelper
}

// spawnRoot starts a group's root with the shim's descriptors and protocol
// and sends it init; its answer is awaitReady's to take.
func (g *guardian) spawnRoot(root groupRoot, init msg) (*shimGroup, error) {
	name := root.name
	mine, theirs, err := socketpair()
	if err != nil {
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	files := []*os.File{root.in, devnull, os.Stderr, theirs, root.out, root.errf}
	if g.cg != nil && !root.inproc {
		// The shim stays outside the leaf (it must outlive cgroup.kill to reap);
		// it gets the leaf as fd 6 and starts its program inside it. (A root
		// that is its program starts nothing: its leaf stays empty.)
		l := g.cg.leaves[name]
		lf, err := l.open()
		if err != nil {
			return nil, err
		}
		defer lf.Close()
		files = append(files, lf)
		init.Leaf, init.Join = l.dir, g.backend.Join
	}
	if root.helper != nil {
		init.StartFd = len(files)
		files = append(files, root.helper.peer)
	}
	g.mu.Lock() // the shim must be registered before the reaper can see it exit
	pid, err := startProcess(root.exe, root.argv, root.env, files, false)
	grp := &shimGroup{name: name, pid: pid, inproc: root.inproc, conn: newConn(mine), gone: make(chan struct{})}
	if err == nil {
		g.groups[name] = grp
		grp.fam = trackFamily(pid, &g.mu, grp.gone) // while pid is surely our unreaped shim
	}
	g.mu.Unlock()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s group: %w", name, err)
	}
	grp.helper = root.helper
	if err := grp.conn.send(init); err != nil {
		return grp, fmt.Errorf("start %s group: %w", name, err)
	}
	return grp, nil
}

// awaitReady takes a launched group's answer to its init.
func (grp *shimGroup) awaitReady() error {
	reply, err := grp.conn.recv()
	if err != nil {
		return fmt.Errorf("start %s group: %w", grp.name, err)
	}
	if reply.Op != opReady {
		return fmt.Errorf("start %s group: the shim answered %q", grp.name, reply.Op)
	}
	if reply.Err != "" {
		return fmt.Errorf("start %s: %s", grp.name, reply.Err)
	}
	if grp.helper != nil {
		grp.helper.pid = reply.Pid
	}
	grp.in = grp.conn.pump()
	return nil
}

func (g *guardian) loop() int {
	mainIn := g.main.pump()
	fired := make(chan struct{}, 1)
	go func() {
		for g.timer.Wait() == nil {
			fired <- struct{}{}
		}
	}()
	hold, worker := g.groups[groupHold], g.groups[groupWorker]
	if hold == nil { // run mode: no hold; a group that never delivers
		hold = &shimGroup{name: groupHold}
	}
	for {
		select {
		case m, ok := <-mainIn:
			if !ok {
				// The supervisor is gone: nobody is left to read events or print, so
				// contain everything now, within the grace, and say so on the
				// stderr we share with it: nothing else will.
				began := time.Now()
				rep := g.containAll(false)
				g.relay.drain(relayDrainBound)
				fmt.Fprintln(os.Stderr, orphanedLine(g.supervisorGone(), rep, time.Since(began)))
				return 0
			}
			if m.Op == opExit {
				rep := g.containAll(m.NoGrace)
				// The worker's last words come before the terminal line.
				g.relay.drain(relayDrainBound)
				_ = g.main.send(msg{Op: opExit, Reply: true, ID: m.ID, Report: &rep})
				return 0
			}
			_ = g.main.send(g.handle(m))
		case m, ok := <-hold.in:
			hold.in = g.fromShim(hold, m, ok)
		case m, ok := <-worker.in:
			worker.in = g.fromShim(worker, m, ok)
		case <-fired:
			g.expire()
		}
	}
}

// fromShim forwards a group's exit and treats a shim that dies before we killed it
// as a breach: its orphans have re-parented to us and are killed at once.
func (g *guardian) fromShim(grp *shimGroup, m msg, ok bool) <-chan msg {
	if ok {
		if m.Op == opExited {
			g.forwardExit(grp, m)
		}
		return grp.in
	}
	_ = grp.conn.close()
	if grp.closed {
		return nil
	}
	rep := g.contain(grp, time.Now())
	if grp.inproc {
		// The embedded hold is its root: its death is its program's exit.
		if !grp.exitFwd {
			g.forwardExit(grp, g.deathOf(grp))
		}
		return nil
	}
	_ = g.main.send(msg{Op: opExited, Group: grp.name, Code: -1,
		Err: "the process rooting the " + grp.name + " group died unexpectedly; its processes were killed", Report: &rep})
	return nil // a nil channel is never ready again
}

// deathOf is the exit report of a group rooted at its program (inproc) whose
// root died: its wait status, once the reaper has it.
func (g *guardian) deathOf(grp *shimGroup) msg {
	select {
	case <-grp.gone:
	case <-time.After(time.Second):
		return msg{Op: opExited, Code: -1}
	}
	// The reaper wrote status before it closed gone.
	code, sig := exitCodeOf(grp.status)
	return msg{Op: opExited, Code: code, Signal: sig}
}

func (g *guardian) handle(m msg) msg {
	reply := msg{Op: m.Op, Reply: true, ID: m.ID}
	switch m.Op {
	case opArm:
		if err := g.arm(m); err != nil {
			reply.Err = err.Error()
		}
	case opStart:
		pid, err := g.startWorker(m)
		reply.Pid = pid
		if err != nil {
			reply.Err = err.Error()
		}
	case opContain:
		grp := g.groups[m.Group]
		if grp == nil {
			reply.Err = "unknown group " + m.Group
			break
		}
		until := g.termUntil(grp)
		if m.NoGrace {
			until = time.Now()
		}
		rep := g.contain(grp, until)
		reply.Report = &rep
		if grp.exit != nil {
			reply.Exited, reply.Code, reply.Signal = true, grp.exit.Code, grp.exit.Signal
		}
	case opSignal:
		g.forward(g.groups[groupWorker], syscall.Signal(m.Signal))
	case opProbe:
		if grp := g.groups[m.Group]; grp != nil && !grp.closed {
			n, err := g.live(grp)
			reply.Live = n
			if err != nil {
				reply.Err = err.Error()
			}
		}
	case opRelease:
		if grp := g.groups[groupHold]; grp != nil && !grp.closed {
			_ = grp.conn.send(msg{Op: opRelease})
		}
	default:
		reply.Err = "unknown request " + m.Op
	}
	return reply
}

// arm accepts deadline generation gen+1 only: a deadline that already fired is
// terminal, and a renewal never moves an expired deadline back into the future.
func (g *guardian) arm(m msg) error {
	now, err := platform.ContinuousMillis()
	if err != nil {
		return err
	}
	if err := g.check(now, m.Gen, m.FireMs, m.KillMs); err != nil {
		return err
	}
	if err := g.timer.Set(m.FireMs); err != nil {
		return err
	}
	g.gen, g.fireMs, g.killMs = m.Gen, m.FireMs, m.KillMs
	return nil
}

func (g *guardian) startWorker(m msg) (int, error) {
	grp := g.groups[groupWorker]
	now, err := platform.ContinuousMillis()
	if err != nil {
		return 0, err
	}
	switch {
	case grp.closed || grp.started:
		return 0, errors.New("the worker group was already used")
	case g.gen == 0 || g.expired || now >= g.fireMs:
		return 0, errors.New("no live authority deadline")
	}
	grp.started = true
	start := msg{Op: opStart, Env: m.Env, FireMs: g.fireMs}
	if grp.helper != nil {
		// Straight to the helper: the shim learns the worker's pid after.
		pid, err := grp.helper.start(m.Env, g.fireMs, helperAnswerBound)
		if err != nil {
			return 0, err
		}
		start = msg{Op: opStart, Pid: pid}
	}
	if err := grp.conn.send(start); err != nil {
		return 0, err
	}
	select {
	case r, ok := <-grp.in:
		if !ok {
			return 0, errors.New("the worker group's root process died")
		}
		if r.Op != opStart {
			// The shim replies before it reports an exit; anything else is a
			// broken shim, and a start we cannot account for is refused.
			return 0, fmt.Errorf("the worker group answered %q to its start", r.Op)
		}
		if r.Err != "" {
			return 0, errors.New(r.Err)
		}
		return r.Pid, nil
	case <-time.After(10 * time.Second):
		return 0, errors.New("the worker group did not confirm the start")
	}
}

// termUntil is when a group's graceful TERM ends (armedDeadline.stopBy).
func (g *guardian) termUntil(grp *shimGroup) time.Time {
	return g.stopBy(grp.name, g.grace)
}

// expire runs when the armed deadline fires: the worker group is contained on the
// guardian's own clock, whatever the supervisor is doing (or whether it is frozen).
func (g *guardian) expire() {
	now, err := platform.ContinuousMillis()
	if err == nil && g.gen > 0 && now < g.fireMs {
		return // re-armed to a later deadline after this expiry was queued
	}
	g.expired = true
	grp := g.groups[groupWorker]
	rep := g.contain(grp, g.termUntil(grp))
	_ = g.main.send(msg{Op: opExpired, Gen: g.gen, Report: &rep})
}

// contain proves a group's tree empty and then kills and reaps the shim that rooted
// it. If the shim is already gone, its orphans are ours: everything below the
// guardian except the other groups' healthy shims is swept instead.
func (g *guardian) contain(grp *shimGroup, termUntil time.Time) Report {
	if grp.closed {
		return grp.report
	}
	return g.sweep(grp, g.others(grp), termUntil)
}

// others lists the shims of the other groups that are not closed: a sweep of
// the guardian's own tree leaves their healthy subtrees alone. It is read
// before any concurrent sweep starts (containAll), since a sweep closes its
// group when done; a shim closed meanwhile stays in the list harmlessly (its
// tree was proven empty).
func (g *guardian) others(grp *shimGroup) []int {
	var pids []int
	for _, other := range g.groups {
		if other != grp && !other.closed {
			pids = append(pids, other.pid)
		}
	}
	return pids
}

// rootOf is where a sweep of grp starts: its shim while it runs, or, once it is
// dying or gone, the guardian itself with the other groups skipped. A dying
// shim's orphans move to us before it shows as dead (platform.Proc.Exiting),
// and a walk below it then finds nothing: an empty tree that proves nothing.
func (g *guardian) rootOf(grp *shimGroup, others []int) (int, []int) {
	if g.shimAlive(grp) {
		return grp.pid, nil
	}
	return os.Getpid(), others
}

// sweep touches only grp, so containAll may run one per group concurrently.
func (g *guardian) sweep(grp *shimGroup, others []int, termUntil time.Time) Report {
	if grp.inproc {
		g.endInProc(grp, termUntil)
	}
	root, skip := g.rootOf(grp, others)
	s := newSweeper()
	s.family = grp.fam
	if l := g.leafOf(grp); l != nil {
		s.backend, s.container, s.members = BackendCgroup, l.killAndWait, l.members
	}
	rep := s.terminate(root, skip, termUntil, g.proof, os.Stderr)
	if root == grp.pid && !g.shimAlive(grp) {
		// The shim began to die (a worker can SIGKILL it) while we swept: its
		// orphans re-parented to us and a scan below its pid no longer sees
		// them, so that "empty" proves nothing. Sweep our own tree at once.
		// A shim not exiting now was not exiting during the scan either, and
		// only an exiting shim hands its children on.
		// The same sweeper keeps counting, so Killed covers both passes.
		again := s.terminate(os.Getpid(), others, time.Now(), g.proof, os.Stderr)
		rep = again
	}
	if rep.ProvenEmpty {
		if !grp.inproc {
			g.awaitExitReport(grp, time.Second)
		}
		g.killShim(grp)
		grp.closed = true
		// The leaf itself is removed with the run's cgroup when the guardian
		// ends (containAll), off the path to this group's proof.
		if l := g.leafOf(grp); l != nil && g.stats {
			l.stats(&rep)
		}
	}
	grp.tried = true
	grp.report = rep
	return rep
}

// endInProc is the TERM phase of a group whose root is its program (the
// embedded hold): the sweep below signals only what the root started, so the
// root itself is sent SIGTERM, and its exit report awaited, until termUntil;
// it is killed after the sweep, as a shim is. No grace (termUntil passed)
// sends nothing: the hold must not release.
func (g *guardian) endInProc(grp *shimGroup, termUntil time.Time) {
	if !grp.started || grp.exitFwd || grp.exit != nil || !time.Now().Before(termUntil) {
		return
	}
	g.mu.Lock()
	select {
	case <-grp.gone:
	default:
		_ = unix.Kill(grp.pid, syscall.SIGTERM) // our unreaped child: the pid is its
	}
	g.mu.Unlock()
	g.awaitExitReport(grp, time.Until(termUntil))
}

// shimAlive reports whether grp's shim still runs and has not begun to exit.
// Under g.mu the reaper cannot reap it, so its pid still names it.
func (g *guardian) shimAlive(grp *shimGroup) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-grp.gone:
		return false
	default:
	}
	p, err := platform.NewProcReader().Stat(grp.pid)
	return err == nil && !p.Dead() && !p.Exiting()
}

// killShim kills a shim whose tree is proven empty. The pid is our own
// unreaped child while the lock is held. It does not wait for the shim to die:
// a process of a dozen threads takes several milliseconds to, and the proof
// that its tree is empty is what the supervisor waits for. The shim can do
// nothing meanwhile - SIGKILL is pending, it runs no instruction of its own
// again - and containAll waits for every killed shim before the guardian
// says it is done (awaitShim).
func (g *guardian) killShim(grp *shimGroup) {
	g.mu.Lock()
	select {
	case <-grp.gone:
	default:
		_ = unix.Kill(grp.pid, syscall.SIGKILL)
	}
	g.mu.Unlock()
	// The socket is not closed here: closing our end would discard an exit
	// report the shim wrote but we have not read yet (run needs that status).
	// The dead shim's end gives EOF after the last buffered message, and
	// fromShim closes ours then.
}

// awaitShim waits (bounded) until a killed shim has been reaped.
func (g *guardian) awaitShim(grp *shimGroup) {
	select {
	case <-grp.gone:
	case <-time.After(2 * time.Second):
	}
}

// containAll contains both groups at once (the supervisor died or is done), then
// sweeps anything else left below the guardian; noGrace kills without the TERM
// phase (the supervisor could not prove the worker group empty, so the hold
// must not release). A group whose teardown already
// ran to the proof bound is not tried again: its survivors were reported, and
// waiting out the bound a second time would only delay that verdict.
func (g *guardian) containAll(noGrace bool) Report {
	var unproven []int
	var swept []*shimGroup
	for _, grp := range g.groups {
		if grp.closed {
			continue
		}
		if grp.tried {
			unproven = append(unproven, grp.pid)
			continue
		}
		swept = append(swept, grp)
	}
	// Each sweep's plan is read before any of them runs: a running sweep
	// writes its own group's state (closed), which another's plan reads.
	others := make([][]int, len(swept))
	until := make([]time.Time, len(swept))
	for i, grp := range swept {
		others[i], until[i] = g.others(grp), g.termUntil(grp)
		if noGrace {
			until[i] = time.Now()
		}
	}
	var wg sync.WaitGroup
	for i, grp := range swept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.sweep(grp, others[i], until[i])
		}()
	}
	wg.Wait()
	// A shim killed after its tree was proven empty may still be dying: it is
	// left out of the last sweep (its tree is empty and it can no longer
	// fork), and waited for before the guardian says it is done.
	skip := unproven
	for _, grp := range g.groups {
		if grp.closed {
			select {
			case <-grp.gone:
			default:
				skip = append(skip, grp.pid)
			}
		}
	}
	rest := newSweeper().terminate(os.Getpid(), skip, time.Now(), g.proof, os.Stderr)
	rep := Report{Backend: g.backend.Name, ProvenEmpty: rest.ProvenEmpty && len(unproven) == 0}
	for _, grp := range swept {
		rep.merge(grp.report)
		rep.ProvenEmpty = rep.ProvenEmpty && grp.report.ProvenEmpty
	}
	rep.merge(rest)
	// The shims are not in the run's cgroup: it is removed while they die.
	// A run not proven empty keeps it, as evidence for sweep.
	if g.cg != nil && rep.ProvenEmpty {
		g.cg.remove(os.Stderr)
	}
	for _, grp := range g.groups {
		if grp.closed {
			g.awaitShim(grp)
		}
	}
	return rep
}

// supervisorGone says why the supervisor's end of our socket closed: it died
// (we were re-parented), or it let go of us on purpose, having found us
// stopped or unresponsive, and contains the run itself.
func (g *guardian) supervisorGone() string {
	if os.Getppid() != g.supervisor {
		return "the supervisor died"
	}
	return "the supervisor gave up on this guardian (found it stopped or unresponsive)"
}

// orphanedLine is what the guardian says after containing a run whose
// supervisor is gone: for a dead supervisor, the only account of it a user
// will get.
func orphanedLine(why string, rep Report, took time.Duration) string {
	ms := took.Milliseconds()
	if !rep.ProvenEmpty {
		return fmt.Sprintf("octostore-supervisor guardian: %s; its worker and hold groups could NOT be proven empty (%s, %d processes killed, %d survivors, %d ms)",
			why, rep.Backend, rep.Killed, len(rep.Survivors), ms)
	}
	return fmt.Sprintf("octostore-supervisor guardian: %s; its worker and hold groups were killed and proven empty (%s, %d processes killed, %d ms)",
		why, rep.Backend, rep.Killed, ms)
}

// forward delivers sig to every live member of a group: its tree below the shim
// and, under the cgroup backend, every process in its leaf.
func (g *guardian) forward(grp *shimGroup, sig syscall.Signal) {
	if grp == nil || grp.closed {
		return
	}
	s := newSweeper()
	s.family = grp.fam
	if live, err := s.alive(grp.pid, nil); err == nil {
		_ = s.signalAll(live, sig)
	}
	if l := g.leafOf(grp); l != nil {
		// Only members the tree walk did not reach (one that left our parent
		// chain): a process signalled twice may take the second as "force quit".
		for _, pid := range l.members() {
			if _, done := s.seen[pid]; done {
				continue
			}
			if p, err := s.r.Stat(pid); err == nil {
				_ = s.r.Signal(p, sig)
			}
		}
	}
}

// live counts the group's processes that can still run: its tree (below the
// shim, or below us once the shim is gone) and, under the cgroup backend, the
// leaf's members, which include any the tree walk does not reach. It is what the
// teardown's proof looks at, asked without killing anything.
func (g *guardian) live(grp *shimGroup) (int, error) {
	s := newSweeper()
	s.family = grp.fam
	root, skip := g.rootOf(grp, g.others(grp))
	procs, err := s.alive(root, skip)
	if err != nil || len(procs) > 0 {
		return len(procs), err
	}
	if l := g.leafOf(grp); l != nil {
		return len(l.members()), nil
	}
	return 0, nil
}

func (g *guardian) forwardExit(grp *shimGroup, m msg) {
	grp.exitFwd = true
	_ = g.main.send(msg{Op: opExited, Group: grp.name, Code: m.Code, Signal: m.Signal})
}

// awaitExitReport waits (bounded) for a started program's exit report before its
// shim is killed: the tree can be proven empty before the shim has reaped the
// program and reported, and killing the shim then would lose the status that
// run exits with. The report is kept for the containment reply, not forwarded:
// mid-teardown it would reach the supervisor ahead of the notification that
// explains the teardown (an expired deadline) and be mistaken for a worker
// that ended on its own.
func (g *guardian) awaitExitReport(grp *shimGroup, bound time.Duration) {
	if !grp.started || grp.exitFwd || grp.in == nil {
		return
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		select {
		case m, ok := <-grp.in:
			if !ok {
				grp.in = nil
				return
			}
			if m.Op == opExited {
				grp.exitFwd, grp.exit = true, &m
				return
			}
		case <-t.C:
			return
		}
	}
}
