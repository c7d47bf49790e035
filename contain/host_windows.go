package contain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/windows"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/platform"
)

// killedExitCode is the exit status TerminateJobObject gives every process it
// kills: 1, as os.Process.Kill (TerminateProcess) does on Windows.
const killedExitCode = 1

// deadlinePoll bounds how late the supervisor notices its own deadline: Go
// timers may not count time spent in suspend, so the continuous clock is read
// at least this often instead of trusting one long timer (as hold/clock.go does).
const deadlinePoll = 100 * time.Millisecond

// jobGroup is one protected group (the hold's or the worker's): a job object
// with KILL_ON_JOB_CLOSE and breakaway off, and the group's main process, the
// root of a console process group so CTRL_BREAK_EVENT reaches its tree.
type jobGroup struct {
	name string
	job  *platform.Job

	mu       sync.Mutex // held across start and teardown, which must not interleave
	proc     *platform.Process
	started  bool   // the program runs or ran
	closed   bool   // torn down and proven empty: nothing may start here again
	report   Report // the proven teardown's report (closed), else the last tried
	stopping bool   // a teardown began: a main-process exit now is not news

	exitMu   sync.Mutex
	exitCode *int          // the main process's status, once known
	exitDone chan struct{} // closed when exitCode is set
}

func newJobGroup(name string, limits platform.JobLimits) (*jobGroup, error) {
	j, err := platform.NewJob(limits)
	if err != nil {
		return nil, fmt.Errorf("create the %s group's job object: %w", name, err)
	}
	return &jobGroup{name: name, job: j, exitDone: make(chan struct{})}, nil
}

// startLocked starts the group's program in its job (born inside: created
// suspended, in the job before its first instruction) and reports its exit to
// exited unless a teardown took the group over first. g.mu must be held.
func (g *jobGroup) startLocked(spec platform.ProcSpec, exited func(code int)) error {
	spec.NewProcessGroup = true
	p, err := g.job.Start(spec)
	if err != nil {
		return err
	}
	g.proc, g.started = p, true
	go func() {
		code, err := p.Wait(context.Background())
		if err != nil {
			return // closed by close: nobody waits for this exit any more
		}
		c := int(code)
		g.exitMu.Lock()
		g.exitCode = &c
		close(g.exitDone)
		report := !g.stopping
		g.exitMu.Unlock()
		if report {
			exited(c)
		}
	}()
	return nil
}

// exitStatus waits up to limit for the main process's exit status: a teardown
// can prove the job empty a moment before Wait has collected it.
func (g *jobGroup) exitStatus(limit time.Duration) (int, bool) {
	select {
	case <-g.exitDone:
	case <-time.After(limit):
		return 0, false
	}
	g.exitMu.Lock()
	defer g.exitMu.Unlock()
	return *g.exitCode, true
}

// teardown stops the group and proves it empty: CTRL_BREAK_EVENT to its
// console process group, up to termUntil for it to empty on its own, then
// TerminateJobObject, then up to proofBound for the kernel's accounting to show
// no active process. The completion port only wakes the wait; the proof is
// always ActiveProcesses == 0. A proven group is closed: it is never torn down
// twice. Nothing here starts a process.
func (g *jobGroup) teardown(termUntil time.Time, proofBound time.Duration, diag io.Writer) Report {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return g.report
	}
	g.exitMu.Lock()
	g.stopping = true
	g.exitMu.Unlock()

	start := time.Now()
	rep := Report{Backend: BackendJob}
	seen := map[uint32]struct{}{}
	note := func() int {
		pids, err := g.job.PIDs()
		if err != nil {
			fmt.Fprintf(diag, "octostore-supervisor: listing the %s group's job: %v\n", g.name, err)
		}
		for _, pid := range pids {
			seen[pid] = struct{}{}
		}
		return len(pids)
	}
	if n := note(); n > 0 && g.proc != nil && time.Now().Before(termUntil) {
		// The group's root pid cannot have been reused: we hold its process
		// handle, and Windows keeps a pid (and so the group id) while any
		// handle to the process is open.
		if err := platform.CtrlBreak(g.proc.Pid); err != nil {
			fmt.Fprintf(diag, "octostore-supervisor: graceful stop of the %s group: %v; terminating its job at once\n", g.name, err)
		} else {
			ctx, cancel := context.WithDeadline(context.Background(), termUntil)
			_ = g.job.WaitEmpty(ctx)
			cancel()
		}
	}
	note()
	// Always issued, even when the group looks empty: it is harmless on an
	// empty job and closes the gap where a member appeared after the read.
	if err := g.job.Terminate(killedExitCode); err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: terminating the %s group's job: %v\n", g.name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), proofBound)
	err := g.job.WaitEmpty(ctx)
	cancel()
	rep.ProvenEmpty = err == nil
	if err != nil {
		fmt.Fprintf(diag, "octostore-supervisor: proving the %s group empty: %v\n", g.name, err)
		rep.Survivors = jobSurvivors(g.job)
	}
	rep.Killed = len(seen)
	rep.LimitHit = jobLimitHit(g.job)
	rep.DurationMs = time.Since(start).Milliseconds()
	g.report = rep
	g.closed = rep.ProvenEmpty
	return rep
}

// close releases the group's handles. Anything still in the job dies with the
// last handle (KILL_ON_JOB_CLOSE); the process handle is closed after the job,
// so the group id stays reserved while it could still be signalled.
func (g *jobGroup) close() {
	_ = g.job.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proc != nil {
		_ = g.proc.Close()
	}
}

// jobSurvivors names what is still in a job: pid and image path where Windows
// still lets us open the process.
func jobSurvivors(j *platform.Job) []Survivor {
	pids, err := j.PIDs()
	if err != nil {
		return []Survivor{{Pid: -1, State: "unknown", Command: "the job's process list could not be read: " + err.Error()}}
	}
	out := make([]Survivor, 0, len(pids))
	for _, pid := range pids {
		out = append(out, Survivor{Pid: int(pid), State: "running", Command: imageName(pid)})
	}
	return out
}

func imageName(pid uint32) string {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "?"
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return "?"
	}
	return windows.UTF16ToString(buf[:n])
}

// jobHost is the Windows host: the supervisor itself holds both groups' jobs
// and enforces the deadline. There is no guardian to survive the supervisor,
// and none is needed: the jobs are KILL_ON_JOB_CLOSE, so when the supervisor
// dies however it dies, the kernel closes its handles and kills both groups.
type jobHost struct {
	cfg       Config
	diag      io.Writer
	hold      *jobGroup
	worker    *jobGroup
	workerOut *os.File
	notesCh   chan msg
	stopWatch chan struct{} // closed by close: ends the watcher
	closeOnce sync.Once

	mu sync.Mutex // guards armedDeadline between the lifecycle and the watcher
	armedDeadline
}

// openHost creates both jobs, then starts the hold in its job with the event
// pipe as its stdout. A job that cannot be created, or whose limits read back
// differently, fails the run before anything starts (exit 70). After the jobs
// exist the host is returned even on error, so the caller contains them.
func openHost(cfg Config, events, workerOut *os.File, _ []*os.File) (host, error) {
	worker, err := newJobGroup(groupWorker, workerJobLimits(cfg.Backend))
	if err != nil {
		return nil, err
	}
	hold, err := newJobGroup(groupHold, platform.JobLimits{})
	if err != nil {
		worker.close()
		return nil, err
	}
	if !worker.job.LimitsVerified() {
		fmt.Fprintf(cfg.Stderr, "octostore-supervisor: this kernel returns no job limits to read back (Wine): KILL_ON_JOB_CLOSE and breakaway off are set but unverified\n")
	}
	// workerOut is one of our standard handles; the worker gets its own
	// duplicate from Start, and ours stays open for the supervisor.
	h := &jobHost{cfg: cfg, diag: cfg.Stderr, hold: hold, worker: worker, workerOut: workerOut,
		notesCh: make(chan msg, 16), stopWatch: make(chan struct{})}
	go h.watch()
	hold.mu.Lock()
	err = hold.startLocked(platform.ProcSpec{Argv: cfg.Hold, Env: cfg.Env, Stdout: events, Stderr: os.Stderr},
		func(code int) { h.notesCh <- msg{Op: opExited, Group: groupHold, Code: code} })
	hold.mu.Unlock()
	if err != nil {
		return h, fmt.Errorf("start the hold: %w", err)
	}
	return h, nil
}

func (h *jobHost) group(name string) *jobGroup {
	if name == groupHold {
		return h.hold
	}
	return h.worker
}

func (h *jobHost) notes() <-chan msg { return h.notesCh }

// lost never fires: the host is this process, and if it dies the kernel
// contains both groups.
func (h *jobHost) lost() <-chan string { return nil }

func (h *jobHost) arm(gen uint64, dl events.Deadline) error {
	now, err := platform.ContinuousMillis()
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(now, gen, dl.FireMs, dl.KillMs); err != nil {
		return err
	}
	h.gen, h.fireMs, h.killMs = gen, dl.FireMs, dl.KillMs
	return nil
}

// watch enforces the armed deadline on the continuous clock, whatever the
// lifecycle is doing (even blocked writing a line to a stdout nobody reads).
func (h *jobHost) watch() {
	t := time.NewTicker(deadlinePoll)
	defer t.Stop()
	for {
		select {
		case <-h.stopWatch:
			return
		case <-t.C:
		}
		h.mu.Lock()
		gen, fire, expired := h.gen, h.fireMs, h.expired
		h.mu.Unlock()
		if gen == 0 || expired {
			continue
		}
		if now, err := platform.ContinuousMillis(); err == nil && now < fire {
			continue
		}
		// The clock is past the deadline, or cannot be read: either way the
		// authority can no longer be vouched for.
		h.expire()
	}
}

// expire contains the worker group at the deadline, then tells the lifecycle.
func (h *jobHost) expire() {
	h.mu.Lock()
	if h.expired {
		h.mu.Unlock()
		return
	}
	h.expired = true
	until := h.stopBy(groupWorker, h.cfg.Grace)
	gen := h.gen
	h.mu.Unlock()
	rep := h.worker.teardown(until, h.cfg.ProofBound, h.diag)
	h.notesCh <- msg{Op: opExpired, Gen: gen, Report: &rep}
}

// start starts the worker once, only under a live deadline, re-checked just
// before the process is created so a supervisor that stalled at the gate
// cannot release work late. The worker group's lock keeps expire from
// interleaving: it either runs before (and the start is refused) or after
// (and contains the started worker).
func (h *jobHost) start(env []string) error {
	g := h.worker
	g.mu.Lock()
	defer g.mu.Unlock()
	now, err := platform.ContinuousMillis()
	if err != nil {
		return err
	}
	h.mu.Lock()
	live := h.gen > 0 && !h.expired && now < h.fireMs
	h.mu.Unlock()
	switch {
	case g.closed || g.started:
		return errors.New("the worker group was already used")
	case !live:
		return errors.New("no live authority deadline")
	}
	spec := platform.ProcSpec{Argv: []string{h.cfg.Worker}, Env: append(workerEnv(h.cfg.Env), env...),
		Stdout: h.workerOut, Stderr: os.Stderr}
	return g.startLocked(spec, func(code int) { h.notesCh <- msg{Op: opExited, Group: groupWorker, Code: code} })
}

func (h *jobHost) contain(group string, noGrace bool) (Report, error) {
	until := time.Now()
	if !noGrace {
		h.mu.Lock()
		until = h.stopBy(group, h.cfg.Grace)
		h.mu.Unlock()
	}
	return h.group(group).teardown(until, h.cfg.ProofBound, h.diag), nil
}

// release sends CTRL_BREAK_EVENT to the hold's console process group: the
// hold's graceful stop, on which it releases its lease. Where no console event
// can be delivered (no shared console: a service, or Wine) the lease cannot be
// released early; errNoRelease makes the lifecycle skip waiting for it.
func (h *jobHost) release() error {
	g := h.hold
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proc == nil || g.closed {
		return nil
	}
	if err := platform.CtrlBreak(g.proc.Pid); err != nil {
		return fmt.Errorf("%w: %w", errNoRelease, err)
	}
	return nil
}

// finish is the hold group's teardown: no process of the host's own is left
// to end, and close releases the handles.
func (h *jobHost) finish(noGrace bool) (Report, error) { return h.contain(groupHold, noGrace) }

// fallback terminates both jobs at once. The job host has no failure of its
// own that leads here; it is the lifecycle's last resort all the same.
func (h *jobHost) fallback(_, proof time.Duration, diag io.Writer) Report {
	rep := h.worker.teardown(time.Now(), proof, diag)
	hrep := h.hold.teardown(time.Now(), proof, diag)
	proven := rep.ProvenEmpty && hrep.ProvenEmpty
	rep.merge(hrep)
	rep.ProvenEmpty = proven
	return rep
}

func (h *jobHost) close() {
	h.closeOnce.Do(func() {
		close(h.stopWatch)
		h.worker.close()
		h.hold.close()
	})
}
