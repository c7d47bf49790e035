package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/octostore-supervisor/supervisor/internal/testkit/pidfile"
)

const usage = `usage: escaper [flags]   (no arguments: flags from $ESCAPER_ARGS, split on spaces)
  --pidfile PATH          append "PID STARTTIME ROLE" for every escaper and light process;
                          a failed start of a child, or a child's failed set-up, to PATH.errors
  --log PATH              append "started PID term T" (and "stopped PID" with --term-exits)
  --env-out PATH          write the worker's environment, one KEY=VALUE per line
  --term-exits            on SIGTERM/SIGINT/SIGHUP log "stopped PID" and exit 0
  --ignore-signals        ignore SIGTERM/SIGINT/SIGHUP here and in every spawned process
  --marker PATH           create PATH (and PATH.ROLE in spawned processes) after --marker-after
  --marker-after DUR      delay before markers (default 0s)
  --touch-ready           create $OCTOSTORE_SUPERVISOR_READY_FILE after --ready-after
  --ready-after DUR       delay before the ready file (default 0s)
  --exit CODE             exit with CODE after --exit-after
  --exit-after DUR        delay before exiting (default 0s)
  --stdout-forge          print a forged supervisor line and hello lines
  --tamper PATH           probe supervisor state, record "ok WHAT"/"fail WHAT: err" lines
  --inside PATH           (Linux) write the worker's identity, pid, open fds and the pids its /proc lists
  --reach LIST            (Linux) wait for pids in LIST, try to signal/stop/ptrace/read them, record in LIST.out
  --kill-all PATH         (unix) kill(-1, SIGKILL): every process this user may signal; write the result to PATH, then go on
  --started-at PATH       write the unix nanoseconds at which main started (the file appears whole)
  --setsid                worker calls setsid()
  --setpgid               worker calls setpgid(0, 0)
  --child                 spawn one child in the same group
  --grandchild-setsid     child spawns a setsid() grandchild (daemon), child exits
  --double-fork           child spawns a grandchild, child exits
  --child-setpgid         spawn a child that leads a new process group
  --join-group            spawn a child leading a new group; worker joins that group
  --nohup                 spawn a child with SIGHUP ignored
  --tree N                spawn N processes below the worker (fan-out 10), wait for all N
  --storm N               fork N processes as fast as possible (fan-out 2)
  --zombies N             spawn N children that exit at once and are never reaped
  --migrate-cgroup        spawn a child that moves itself to the cgroup v2 root (else its parent cgroup)
  --migrate-log PATH      where that child appends "migrate ok DEST"/"migrate fail DEST: err" (required)
  --setuid UID            spawn a child that calls setgroups([]), setgid(UID), setuid(UID)
  --light-tree N          start N /bin/sleep 3600 children, recorded as "PID START light"
  --leader-exit PATH      (Linux) last, the main thread exits alone (SYS_EXIT) while another thread
                          rewrites PATH with "N STATE THREADS" every 10ms
  --detached              (Windows) child spawns a DETACHED_PROCESS grandchild (detached), child exits
  --orphan                (Windows) child spawns a grandchild (orphan) in the same console, child exits
  --new-group             (Windows) spawn a child (newgroup) with CREATE_NEW_PROCESS_GROUP
  --breakaway             (Windows) spawn a child with CREATE_BREAKAWAY_FROM_JOB; if refused exit 75
  --ignore-console        (Windows) ignore CTRL_C/CTRL_BREAK here and in every spawned process
`

const (
	exitUsage    = 64
	exitSoftware = 70
	// exitBreakawayRefused: --breakaway asked to leave the job and Windows
	// said no, which is what a containing job must do.
	exitBreakawayRefused = 75
	// childFlag selects the hidden spawned-process mode; it is honoured only
	// as the very first command-line argument.
	childFlag = "--escaper-child="
)

var errUnsupported = errors.New("mode not supported on this OS")

type options struct {
	pidfile, logPath, envOut string
	termExits, ignoreSignals bool
	marker                   string
	markerAfter              time.Duration
	touchReady               bool
	readyAfter               time.Duration
	exitCode                 int
	exitSet                  bool
	exitAfter                time.Duration
	stdoutForge              bool
	tamper                   string
	inside, reach, killAll   string
	startedAt                string
	setsid, setpgid          bool
	child, grandchildSetsid  bool
	doubleFork, childSetpgid bool
	joinGroup, nohup         bool
	tree, storm, zombies     int
	migrateCgroup            bool
	migrateLog               string
	setuid                   int
	setuidSet                bool
	lightTree                int
	leaderExit               string
	// Windows modes
	detached, orphan, newGroup bool
	breakaway, ignoreConsole   bool
}

// init keeps the main goroutine on the main thread, the thread-group leader,
// which only --leader-exit needs: main lets go of it otherwise.
func init() { runtime.LockOSThread() }

func main() {
	startedAt := time.Now() // as close to the exec as Go lets us get
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], childFlag) {
		runtime.UnlockOSThread()
		os.Exit(runChild(strings.TrimPrefix(os.Args[1], childFlag), os.Args[2:]))
	}
	args := os.Args[1:]
	if len(args) == 0 {
		args = strings.Fields(os.Getenv("ESCAPER_ARGS"))
	}
	o, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Print(usage)
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "escaper: %v\n", err)
		os.Exit(exitUsage)
	}
	if o.leaderExit == "" {
		runtime.UnlockOSThread()
	}
	if o.startedAt != "" {
		// Whole, never empty: a fake hold's waitfile takes the file's existence
		// as the worker's start, and a prompt teardown must not end the
		// worker between the file's creation and its line.
		if err := writeFileAtomic(o.startedAt, fmt.Appendf(nil, "%d\n", startedAt.UnixNano())); err != nil {
			die("--started-at: %v", err)
		}
	}
	os.Exit(runWorker(o))
}

func parseArgs(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("escaper", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.pidfile, "pidfile", "", "")
	fs.StringVar(&o.logPath, "log", "", "")
	fs.StringVar(&o.envOut, "env-out", "", "")
	fs.BoolVar(&o.termExits, "term-exits", false, "")
	fs.BoolVar(&o.ignoreSignals, "ignore-signals", false, "")
	fs.StringVar(&o.marker, "marker", "", "")
	fs.DurationVar(&o.markerAfter, "marker-after", 0, "")
	fs.BoolVar(&o.touchReady, "touch-ready", false, "")
	fs.DurationVar(&o.readyAfter, "ready-after", 0, "")
	fs.IntVar(&o.exitCode, "exit", 0, "")
	fs.DurationVar(&o.exitAfter, "exit-after", 0, "")
	fs.BoolVar(&o.stdoutForge, "stdout-forge", false, "")
	fs.StringVar(&o.tamper, "tamper", "", "")
	fs.StringVar(&o.inside, "inside", "", "")
	fs.StringVar(&o.reach, "reach", "", "")
	fs.StringVar(&o.killAll, "kill-all", "", "")
	fs.StringVar(&o.startedAt, "started-at", "", "")
	fs.BoolVar(&o.setsid, "setsid", false, "")
	fs.BoolVar(&o.setpgid, "setpgid", false, "")
	fs.BoolVar(&o.child, "child", false, "")
	fs.BoolVar(&o.grandchildSetsid, "grandchild-setsid", false, "")
	fs.BoolVar(&o.doubleFork, "double-fork", false, "")
	fs.BoolVar(&o.childSetpgid, "child-setpgid", false, "")
	fs.BoolVar(&o.joinGroup, "join-group", false, "")
	fs.BoolVar(&o.nohup, "nohup", false, "")
	fs.IntVar(&o.tree, "tree", 0, "")
	fs.IntVar(&o.storm, "storm", 0, "")
	fs.BoolVar(&o.detached, "detached", false, "")
	fs.BoolVar(&o.orphan, "orphan", false, "")
	fs.BoolVar(&o.newGroup, "new-group", false, "")
	fs.BoolVar(&o.breakaway, "breakaway", false, "")
	fs.BoolVar(&o.ignoreConsole, "ignore-console", false, "")
	fs.IntVar(&o.zombies, "zombies", 0, "")
	fs.BoolVar(&o.migrateCgroup, "migrate-cgroup", false, "")
	fs.StringVar(&o.migrateLog, "migrate-log", "", "")
	fs.IntVar(&o.setuid, "setuid", -1, "")
	fs.IntVar(&o.lightTree, "light-tree", 0, "")
	fs.StringVar(&o.leaderExit, "leader-exit", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.exitSet = set["exit"]
	o.setuidSet = set["setuid"]

	need := func(dep, of string) error {
		if set[dep] && !set[of] {
			return fmt.Errorf("--%s needs --%s", dep, of)
		}
		return nil
	}
	for _, p := range [][2]string{{"marker-after", "marker"}, {"ready-after", "touch-ready"}, {"exit-after", "exit"},
		{"migrate-cgroup", "migrate-log"}, {"migrate-log", "migrate-cgroup"}} {
		if err := need(p[0], p[1]); err != nil {
			return nil, err
		}
	}
	if o.ignoreConsole {
		// The Windows spelling of --ignore-signals: console control events
		// are what Windows has instead of signals.
		o.ignoreSignals = true
	}
	switch {
	case o.termExits && o.ignoreConsole:
		return nil, errors.New("--term-exits and --ignore-console contradict each other")
	case o.termExits && o.ignoreSignals:
		return nil, errors.New("--term-exits and --ignore-signals contradict each other")
	case o.exitSet && (o.exitCode < 0 || o.exitCode > 255):
		return nil, fmt.Errorf("--exit must be 0..255, got %d", o.exitCode)
	case o.markerAfter < 0 || o.readyAfter < 0 || o.exitAfter < 0:
		return nil, errors.New("durations must not be negative")
	case o.tree < 0 || o.storm < 0 || o.zombies < 0 || o.lightTree < 0:
		return nil, errors.New("--tree, --storm, --zombies and --light-tree must not be negative")
	case o.setuidSet && (o.setuid < 0 || int64(o.setuid) >= math.MaxUint32):
		// (uid_t)-1 means "unchanged" to the kernel, so it is no identity.
		return nil, fmt.Errorf("--setuid must be 0..%d, got %d", uint32(math.MaxUint32-1), o.setuid)
	case o.tree > 0 && o.pidfile == "":
		return nil, errors.New("--tree needs --pidfile (readiness is counted there)")
	case o.setsid && o.setpgid:
		return nil, errors.New("--setsid and --setpgid are alternatives")
	case o.setsid && o.joinGroup:
		return nil, errors.New("--join-group cannot follow --setsid (a session leader cannot change group)")
	}

	// Modes this OS lacks are refused up front, by flag name, so a run on
	// another OS fails with one clear line instead of half-way through.
	unixOnly := []string{"setsid", "setpgid", "grandchild-setsid", "child-setpgid",
		"join-group", "nohup", "tamper", "zombies", "ignore-signals", "setuid"}
	for _, n := range unixOnly {
		if set[n] && !unixModes {
			return nil, fmt.Errorf("--%s: %w", n, errUnsupported)
		}
	}
	for _, n := range []string{"detached", "orphan", "new-group", "breakaway", "ignore-console"} {
		if set[n] && !windowsModes {
			return nil, fmt.Errorf("--%s: %w", n, errUnsupported)
		}
	}
	switch {
	case set["migrate-cgroup"] && !cgroupModes:
		return nil, fmt.Errorf("--migrate-cgroup: %w", errUnsupported)
	case set["light-tree"] && !lightModes:
		return nil, fmt.Errorf("--light-tree: %w", errUnsupported)
	case (set["inside"] || set["reach"]) && !insideModes:
		return nil, fmt.Errorf("--inside, --reach: %w", errUnsupported)
	case set["leader-exit"] && !leaderModes:
		return nil, fmt.Errorf("--leader-exit: %w", errUnsupported)
	case set["leader-exit"] && o.leaderExit == "":
		return nil, errors.New("--leader-exit needs a heartbeat path")
	}
	if o.pidfile != "" {
		if _, err := pidfile.Line(""); err != nil {
			return nil, fmt.Errorf("--pidfile: %w", err)
		}
	}
	return o, nil
}

// conf is what a spawned process inherits from the worker.
type conf struct {
	ignoreSignals bool
	pidfile       string
	marker        string
	markerAfter   time.Duration
}

func (o *options) conf() conf {
	return conf{ignoreSignals: o.ignoreSignals, pidfile: o.pidfile, marker: o.marker, markerAfter: o.markerAfter}
}

// report records a failure of a process whose stderr nobody reads (every
// child's is the null device): with a pidfile, it is appended to
// errorsFile(pidfile), where a test that misses a role can show why;
// without one it goes to stderr.
func (c conf) report(format string, a ...any) {
	line := fmt.Sprintf("escaper %d: "+format+"\n", append([]any{os.Getpid()}, a...)...)
	if c.pidfile == "" || appendLine(errorsFile(c.pidfile), line) != nil {
		os.Stderr.WriteString(line)
	}
}

// errorsFile is where processes sharing pidfile report their failures.
func errorsFile(pidfile string) string { return pidfile + ".errors" }

// die reports a failed run-time action and exits 70: a requested escape
// that silently did not happen would make a test pass for the wrong reason.
func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "escaper: "+format+"\n", a...)
	os.Exit(exitSoftware)
}

func runWorker(o *options) int {
	pid := os.Getpid()
	if o.logPath != "" {
		if err := appendLine(o.logPath, fmt.Sprintf("started %d term %s\n", pid, os.Getenv("OCTOSTORE_FENCING_TERM"))); err != nil {
			die("log: %v", err)
		}
	}
	if o.setsid {
		if err := setsid(); err != nil {
			die("setsid: %v (setsid fails if the worker already leads its process group)", err)
		}
	}
	if o.setpgid {
		if err := setpgid(0, 0); err != nil {
			die("setpgid: %v", err)
		}
	}

	switch {
	case o.ignoreSignals:
		ignoreTermSignals()
	case o.termExits:
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, termSignals...)
		go func() {
			<-ch
			if o.logPath != "" {
				_ = appendLine(o.logPath, fmt.Sprintf("stopped %d\n", pid))
			}
			os.Exit(0)
		}()
	}

	if o.pidfile != "" {
		if err := writePidLine(o.pidfile, "worker"); err != nil {
			die("pidfile: %v", err)
		}
	}
	if o.envOut != "" {
		env := os.Environ()
		sort.Strings(env)
		if err := writeFileAtomic(o.envOut, []byte(strings.Join(env, "\n")+"\n")); err != nil {
			die("env-out: %v", err)
		}
	}
	if o.stdoutForge {
		// The forged line imitates the supervisor's own output, to prove a
		// consumer cannot trust stdout if the worker shares it.
		os.Stdout.WriteString(`{"schema_version":1,"source":"octostore-supervisor","sequence":999,"event":"released","kind":"election","name":"room","candidate_id":"agent","term":7}` + "\n" + "worker says hello\n")
		os.Stderr.WriteString("worker stderr hello\n")
	}
	if o.tamper != "" {
		tamper(o.tamper)
	}
	if o.inside != "" {
		inside(o.inside)
	}
	if o.reach != "" {
		reach(o.reach)
	}
	if o.killAll != "" {
		killAll(o.killAll)
	}

	spawnAll(o)

	if o.marker != "" {
		go func() {
			time.Sleep(o.markerAfter)
			touch(o.marker)
		}()
	}
	if o.touchReady {
		ready := os.Getenv("OCTOSTORE_SUPERVISOR_READY_FILE")
		if ready == "" {
			die("--touch-ready: OCTOSTORE_SUPERVISOR_READY_FILE is not set")
		}
		go func() {
			time.Sleep(o.readyAfter)
			if err := touchErr(ready); err != nil {
				die("touch-ready: %v", err)
			}
		}()
	}
	if o.exitSet {
		go func() {
			time.Sleep(o.exitAfter)
			os.Exit(o.exitCode)
		}()
	}
	if o.leaderExit != "" {
		leaveLeaderThread(o.leaderExit)
	}
	sleepForever()
	return 0
}

func spawnAll(o *options) {
	c := o.conf()
	start := func(role string, budget int, extra ...string) *exec.Cmd {
		cmd, err := spawn(role, c, budget, extra...)
		if err != nil {
			c.report("spawn %s: %v", role, err)
			die("spawn %s: %v", role, err)
		}
		return cmd
	}
	reap := func(cmd *exec.Cmd) { go func() { _ = cmd.Wait() }() }

	if o.breakaway {
		// First, so that a refusal ends the worker before it spawned
		// anything else.
		cmd, err := spawn("breakaway", c, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "escaper: breakaway refused: %v\n", err)
			if o.logPath != "" {
				_ = appendLine(o.logPath, fmt.Sprintf("breakaway refused: %v\n", err))
			}
			os.Exit(exitBreakawayRefused)
		}
		reap(cmd)
	}
	if o.detached {
		reap(start("detacher", 0))
	}
	if o.orphan {
		reap(start("orphaner", 0))
	}
	if o.newGroup {
		reap(start("newgroup", 0))
	}
	if o.child {
		reap(start("child", 0))
	}
	if o.grandchildSetsid {
		reap(start("daemonizer", 0))
	}
	if o.doubleFork {
		reap(start("forker", 0))
	}
	if o.childSetpgid {
		reap(start("pgchild", 0))
	}
	if o.nohup {
		reap(start("nohup", 0))
	}
	if o.migrateCgroup {
		reap(start("migrant", 0, "--migrate-log", o.migrateLog))
	}
	if o.setuidSet {
		spawnSetuid(c, o.setuid, o.logPath)
	}
	if o.joinGroup {
		host := start("host", 0)
		reap(host)
		hp := host.Process.Pid
		// Wait until the host really leads its own group; joining earlier
		// would put the worker into the worker's own (old) group.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if g, err := getpgid(hp); err == nil && g == hp {
				break
			}
			if time.Now().After(deadline) {
				die("join-group: host %d never led its own process group", hp)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := setpgid(0, hp); err != nil {
			die("join-group: setpgid(0, %d): %v", hp, err)
		}
	}
	if o.zombies > 0 {
		for i := 0; i < o.zombies; i++ {
			// Started and deliberately never waited for: each child exits at
			// once and stays a zombie of the worker.
			zombieCmds = append(zombieCmds, start("zombie", 0))
		}
	}
	if o.storm > 0 {
		go spawnShares("storm", c, o.storm, 2)
	}
	if o.tree > 0 {
		spawnShares("tree", c, o.tree, 10)
		waitTree(o.pidfile, o.tree)
	}
	if o.lightTree > 0 {
		if err := startLight(o.lightTree, o.pidfile); err != nil {
			die("light-tree: %v", err)
		}
	}
}

// spawnSetuid starts the setuid child with its stderr on a pipe and waits
// until the child has either changed identity and recorded itself (it then
// writes "ok" and moves its stderr to /dev/null, which ends the pipe) or has
// failed (it writes "escaper: ERR" and exits 70). A failure is not fatal
// for the worker, which may simply not be root: it goes to --log as
// "setuid failed: ERR" and to the worker's stderr, and the worker goes on.
func spawnSetuid(c conf, uid int, logPath string) {
	cmd, err := command("setuid", c, 0, "--uid", strconv.Itoa(uid))
	if err != nil {
		die("spawn setuid: %v", err)
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		die("spawn setuid: %v", err)
	}
	if err := cmd.Start(); err != nil {
		die("spawn setuid: %v", err)
	}
	msg, _ := io.ReadAll(out) // EOF: the child is set up, or has exited
	if string(msg) == "ok\n" {
		go func() { _ = cmd.Wait() }()
		return
	}
	werr := cmd.Wait()
	reason := strings.TrimSpace(strings.TrimPrefix(string(msg), "escaper: "))
	if reason == "" {
		reason = fmt.Sprintf("child ended before setting up (%v)", werr)
	}
	fmt.Fprintf(os.Stderr, "escaper: setuid failed: %s\n", reason)
	if logPath != "" {
		if err := appendLine(logPath, "setuid failed: "+reason+"\n"); err != nil {
			die("log: %v", err)
		}
	}
}

// zombieCmds keeps the zombie children referenced for the worker's lifetime.
var zombieCmds []*exec.Cmd

// spawnShares starts up to fanout children of role that together account
// for total processes (each child counts itself and spawns its own share
// minus one), retrying a failed fork every 10 ms. Only a share's first
// failure is reported: under a pids limit a storm fails for as long as it
// runs, and a line every 10 ms from each process would flood the report.
func spawnShares(role string, c conf, total, fanout int) {
	for _, n := range shares(total, fanout) {
		for tries := 0; ; tries++ {
			cmd, err := spawn(role, c, n)
			if err == nil {
				go func() { _ = cmd.Wait() }()
				break
			}
			if tries == 0 {
				c.report("spawn %s: %v (retrying every 10 ms)", role, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func shares(total, fanout int) []int {
	if total <= 0 {
		return nil
	}
	k := min(fanout, total)
	out := make([]int, k)
	for i := range out {
		out[i] = total / k
		if i < total%k {
			out[i]++
		}
	}
	return out
}

// waitTree counts tree lines in the pidfile: each node writes its line
// before spawning its own children, so N lines mean all N have started.
func waitTree(pidfile string, n int) {
	deadline := time.Now().Add(30 * time.Second)
	got := 0
	for time.Now().Before(deadline) {
		got = countRole(pidfile, "tree")
		if got >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "escaper: tree: only %d of %d processes started within 30s\n", got, n)
}

func countRole(pidfile, role string) int {
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[2] == role {
			n++
		}
	}
	return n
}

// spawn re-executes escaper in child mode (see command) and starts it.
func spawn(role string, c conf, budget int, extra ...string) (*exec.Cmd, error) {
	cmd, err := command(role, c, budget, extra...)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// command prepares escaper in child mode with what the child inherits and
// extra role-specific flags. stdio is /dev/null (exec's default for nil) so
// a surviving descendant never holds the caller's pipes.
func command(role string, c conf, budget int, extra ...string) (*exec.Cmd, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	args := []string{childFlag + role}
	if c.ignoreSignals {
		args = append(args, "--ignore-signals")
	}
	if c.pidfile != "" {
		args = append(args, "--pidfile", c.pidfile)
	}
	if c.marker != "" {
		args = append(args, "--marker", c.marker, "--marker-after", c.markerAfter.String())
	}
	if budget > 0 {
		args = append(args, "--budget", strconv.Itoa(budget))
	}
	cmd := exec.Command(exe, append(args, extra...)...)
	cmd.Args[0] = os.Args[0]
	roleAttrs(cmd, role)
	return cmd, nil
}

var childRoles = map[string]bool{
	"child": true, "daemonizer": true, "daemon": true, "forker": true,
	"grandchild": true, "pgchild": true, "host": true, "nohup": true,
	"tree": true, "storm": true, "zombie": true, "migrant": true, "setuid": true,
	"detacher": true, "detached": true, "orphaner": true, "orphan": true,
	"newgroup": true, "breakaway": true,
}

func runChild(role string, args []string) int {
	fs := flag.NewFlagSet("escaper-child", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c conf
	fs.BoolVar(&c.ignoreSignals, "ignore-signals", false, "")
	fs.StringVar(&c.pidfile, "pidfile", "", "")
	fs.StringVar(&c.marker, "marker", "", "")
	fs.DurationVar(&c.markerAfter, "marker-after", 0, "")
	budget := fs.Int("budget", 0, "")
	migrateLog := fs.String("migrate-log", "", "")
	uid := fs.Int("uid", -1, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || !childRoles[role] ||
		(role == "migrant") != (*migrateLog != "") || (role == "setuid") != (*uid >= 0) {
		fmt.Fprintf(os.Stderr, "escaper: bad internal child invocation (role %q)\n", role)
		return exitUsage
	}
	// Failures go to stderr, which is the null device except for the
	// setuid child, whose worker relays them (one line, which it parses);
	// every other child also reports them to the pidfile's errors file.
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "escaper: "+format+"\n", a...)
		if c.pidfile != "" && role != "setuid" {
			c.report("%s: "+format, append([]any{role}, a...)...)
		}
		return exitSoftware
	}
	if c.ignoreSignals {
		ignoreTermSignals()
	}
	// The pidfile line is built and the file opened before the role's
	// setup, while the process still has the worker's identity: after
	// setuid it may not reach the file any more. It is written after.
	record := func() error { return nil }
	if c.pidfile != "" {
		var err error
		if record, err = preparePidLine(c.pidfile, role); err != nil {
			return fail("pidfile: %v", err)
		}
	}
	switch role {
	case "nohup":
		ignoreHUP()
	case "daemon":
		if err := setsid(); err != nil {
			return fail("setsid: %v", err)
		}
	case "pgchild", "host":
		if err := setpgid(0, 0); err != nil {
			return fail("setpgid: %v", err)
		}
	case "setuid":
		if err := dropPrivileges(*uid); err != nil {
			return fail("%v", err)
		}
	case "migrant":
		// The outcome of the attempt, ok or not, is the evidence; only
		// failing to record it is an error.
		if err := appendLine(*migrateLog, "migrate "+migrateCgroup()+"\n"); err != nil {
			return fail("migrate-log: %v", err)
		}
	}
	// The pidfile line comes last, after signals and group, cgroup or
	// identity changes, so a reader can treat it as "this process is set
	// up".
	if err := record(); err != nil {
		return fail("pidfile: %v", err)
	}
	if role == "setuid" {
		// Tell the worker, then let go of its pipe (see spawnSetuid).
		os.Stderr.WriteString("ok\n")
		if err := detachStderr(); err != nil {
			return exitSoftware
		}
	}
	switch role {
	case "zombie":
		return 0
	case "daemonizer", "forker", "detacher", "orphaner":
		next := map[string]string{"daemonizer": "daemon", "forker": "grandchild",
			"detacher": "detached", "orphaner": "orphan"}[role]
		// Classic daemonize: start the grandchild and exit without waiting,
		// so it is reparented away from the worker's tree.
		if _, err := spawn(next, c, 0); err != nil {
			return fail("spawn %s: %v", next, err)
		}
		return 0
	case "tree":
		spawnShares("tree", c, *budget-1, 10)
	case "storm":
		spawnShares("storm", c, *budget-1, 2)
	}
	if c.marker != "" {
		go func() {
			time.Sleep(c.markerAfter)
			touch(c.marker + "." + role)
		}()
	}
	sleepForever()
	return 0
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

var appendMu sync.Mutex

// appendLine writes s with a single O_APPEND write: the kernel positions
// and writes each such write as one unit on a local file, so lines from many
// escaper processes never interleave or overwrite each other.
func appendLine(path, s string) error {
	appendMu.Lock()
	defer appendMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writePidLine appends this process's "PID START ROLE" line (see
// internal/testkit/pidfile).
func writePidLine(path, role string) error {
	l, err := pidfile.Line(role)
	if err != nil {
		return err
	}
	return appendLine(path, l)
}

// preparePidLine builds this process's pidfile line and opens path now, and
// returns the function that later appends the line in one O_APPEND write
// and closes the file.
func preparePidLine(path, role string) (func() error, error) {
	l, err := pidfile.Line(role)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := f.WriteString(l)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

// writeFileAtomic renames a finished temp file into place so a polling test
// never reads a half-written file.
func writeFileAtomic(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.tmp.%d", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func touchErr(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// touch creates a marker; failure is reported but not fatal, because a
// marker only ever proves that a process was still running.
func touch(path string) {
	if err := touchErr(path); err != nil {
		fmt.Fprintf(os.Stderr, "escaper: marker %s: %v\n", path, err)
	}
}
