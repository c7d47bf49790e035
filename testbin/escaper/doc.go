// Command escaper is a misbehaving worker for the supervisor tests: it
// tries, on request, every way a worker process tree can outlive or tamper
// with its supervisor (new sessions and process groups, double forks,
// orphaned daemons, fork storms, zombies, ignored signals, reading the
// supervisor's state) and leaves evidence a test can check afterwards
// (a pidfile with start times, markers created after a delay, a log).
//
// The supervisor starts a worker with no arguments, so when escaper is run
// without arguments it takes its flags from $ESCAPER_ARGS (split on spaces).
//
// Usage:
//
//	escaper [flags]
//	ESCAPER_ARGS='[flags]' escaper
//
// Flags (combinable):
//
//	--pidfile PATH          every escaper process appends "PID STARTTIME ROLE"
//	                        to PATH in one O_APPEND write (STARTTIME: field 22 of
//	                        /proc/PID/stat on Linux, p_starttime in µs on
//	                        macOS); the worker writes the lines of the
//	                        --light-tree processes. A process that fails to
//	                        start a child or to set itself up (a child's
//	                        stderr is the null device) appends
//	                        "escaper PID: WHAT" to PATH.errors
//	--log PATH              append "started PID term $OCTOSTORE_FENCING_TERM" at
//	                        start and, with --term-exits, "stopped PID"
//	--env-out PATH          write the worker's environment, one KEY=VALUE a line
//	--term-exits            on SIGTERM/SIGINT/SIGHUP log "stopped PID", exit 0
//	--ignore-signals        ignore SIGTERM/SIGINT/SIGHUP here and in every
//	                        spawned process
//	--marker PATH           create PATH after --marker-after; every spawned
//	                        process that keeps running creates PATH.<ROLE>
//	--marker-after DUR      (default 0s)
//	--touch-ready           create $OCTOSTORE_SUPERVISOR_READY_FILE after
//	                        --ready-after
//	--ready-after DUR       (default 0s)
//	--exit CODE             exit with CODE after --exit-after (spawned processes
//	                        keep running)
//	--exit-after DUR        (default 0s)
//	--stdout-forge          print a forged supervisor "released" line and
//	                        "worker says hello" on stdout, "worker stderr hello"
//	                        on stderr
//	--started-at PATH       write the unix nanoseconds at which main started
//	                        (PATH appears with its line in it)
//	--tamper PATH           probe the supervisor's state and record one line per
//	                        attempt in PATH: "ok WHAT" or "fail WHAT: ERR"
//	--inside PATH           (Linux) write what the worker sees of itself: the
//	                        Uid, Gid, Groups and NoNewPrivs lines of
//	                        /proc/self/status, "pid N", "fd N TARGET" per open
//	                        descriptor (the Go runtime's own included),
//	                        "procs ..." (the pids its /proc lists) and "proc1
//	                        CMDLINE" (pid 1's command)
//	--reach LIST            (Linux) wait (30 s at most) until LIST holds pids,
//	                        one a line, ended by "end"; try against each
//	                        signal 0, SIGSTOP (undone at once by SIGCONT if it
//	                        worked), PTRACE_SEIZE, reading /proc/PID/environ,
//	                        listing /proc/PID/fd and opening /proc/PID/fd/0-2
//	                        for writing; open its own cgroup's cgroup.procs,
//	                        cgroup.kill, cgroup.freeze and
//	                        cgroup.subtree_control for writing (writing
//	                        nothing); record "ok WHAT"/"fail WHAT: ERR" lines
//	                        in LIST.out, then create LIST.done
//	--setsid                the worker calls setsid() (direct escape)
//	--setpgid               the worker calls setpgid(0, 0) (direct escape)
//	--child                 spawn one child (role child) in the same group
//	--grandchild-setsid     spawn a child (daemonizer) that spawns a grandchild
//	                        (daemon) calling setsid(), then exits
//	--double-fork           the same without setsid (forker, grandchild)
//	--child-setpgid         spawn a child (pgchild) that calls setpgid(0, 0)
//	--join-group            spawn a child (host) that leads a new group, then the
//	                        worker joins it with setpgid(0, host)
//	--nohup                 spawn a child (nohup) with SIGHUP ignored
//	--tree N                spawn N processes (tree) below the worker, fan-out 10
//	                        per level; the worker waits (30 s at most) until all
//	                        N lines are in --pidfile (required)
//	--storm N               fork N processes (storm) as fast as possible, fan-out
//	                        2, retrying failed forks every 10 ms; no waiting
//	--zombies N             spawn N children (zombie) that exit at once and are
//	                        never reaped
//	--migrate-cgroup        spawn a child (migrant) that tries to leave its
//	                        cgroup (Linux, cgroup v2): it reads its path from
//	                        the "0::" line of /proc/self/cgroup, finds the
//	                        cgroup2 mount in /proc/self/mountinfo (wherever it
//	                        is: /sys/fs/cgroup, /sys/fs/cgroup/unified, ...),
//	                        writes its pid into the cgroup.procs of the mount's
//	                        root and, if that fails, of its cgroup's parent,
//	                        and appends the outcome to --migrate-log
//	--migrate-log PATH      required with --migrate-cgroup: one line
//	                        "migrate ok DEST" or "migrate fail DEST: ERR", DEST
//	                        being the cgroup.procs file written last ("-" if no
//	                        cgroup v2 was found); a failed move is evidence,
//	                        not an error
//	--setuid UID            spawn a child (setuid) that calls setgroups([]),
//	                        setgid(UID) and setuid(UID), as a helper changing
//	                        identity would; the worker waits for it, and if it
//	                        fails (the worker is not root, say) the child exits
//	                        70 and the worker logs "setuid failed: ERR" to
//	                        --log and its stderr, and goes on
//	--light-tree N          start N children running /bin/sleep 3600 directly
//	                        (fork and exec, no escaper, no Go runtime) one
//	                        right after the other, writing "PID START light"
//	                        for each into --pidfile (if set) as soon as it
//	                        runs, START read from the child like every other
//	                        START; with --ignore-signals they ignore
//	                        SIGTERM/SIGINT/SIGHUP from birth (see below). For
//	                        benchmarks that need thousands of processes
//	--leader-exit PATH      (Linux) after everything else, the worker's main
//	                        thread - the thread-group leader - ends with the
//	                        raw exit syscall (SYS_EXIT, not exit_group) while a
//	                        second thread runs on: /proc shows the leader in
//	                        state Z with num_threads above 1 ("Zl" in ps). That
//	                        thread rewrites PATH with "N Z THREADS" every
//	                        10 ms, N counting up, from the moment it sees the
//	                        leader gone, so PATH appears only once the escape
//	                        is set up. Only a SIGKILL to the pid (or the end of
//	                        the group) stops it; a supervisor that judges
//	                        liveness by the leader's state alone takes it for
//	                        a zombie
//
// Windows modes (refused elsewhere; the Unix-only modes above are refused on
// Windows, where console control events take the place of signals):
//
//	--detached              spawn a child (detacher) that spawns a grandchild
//	                        (detached) with DETACHED_PROCESS, no console, so no
//	                        console control event reaches it, then exits
//	--orphan                the same with an ordinary grandchild (orphaner,
//	                        orphan) in the worker's console: Windows keeps no
//	                        parent link, so only a job still holds it
//	--new-group             spawn a child (newgroup) with
//	                        CREATE_NEW_PROCESS_GROUP, out of reach of a
//	                        CTRL_BREAK sent to the worker's group
//	--breakaway             first of all spawns, try a child (breakaway) with
//	                        CREATE_BREAKAWAY_FROM_JOB; a job without
//	                        BREAKAWAY_OK refuses it, and the worker then writes
//	                        "escaper: breakaway refused: ERR" on stderr (and
//	                        "breakaway refused: ERR" to --log) and exits 75;
//	                        outside a job, or in a job that allows it, the
//	                        child runs and the worker goes on
//	--ignore-console        ignore CTRL_C and CTRL_BREAK here and in every
//	                        spawned process (a console handler that claims
//	                        them, installed first thing in each process)
//
// --storm N is the Windows spawn storm too, and --child, --double-fork,
// --tree, --pidfile (START is the creation time, 100 ns since 1601), --log,
// --marker, --touch-ready, --exit and --term-exits (on CTRL_C, CTRL_BREAK or
// CTRL_CLOSE) work there as described.
//
// Order of a worker run: "started" log line; --setsid/--setpgid; signal
// setup; pidfile line; --env-out; --stdout-forge; --tamper; --inside;
// --reach; spawns (with
// the --setuid wait, and the --tree wait before the --light-tree
// processes); then the --marker, --touch-ready and --exit timers run
// concurrently and the worker sleeps until a signal or --exit ends it.
//
// Spawned processes are re-executions of escaper itself (/proc/self/exe on
// Linux, os.Executable elsewhere) with the hidden first argument
// --escaper-child=ROLE, which is accepted only as the first command-line
// argument (never from $ESCAPER_ARGS). Each one sets up its signals, calls
// setsid/setpgid if its role says so, and only then appends its pidfile line,
// so a line in the pidfile means "this process is in its final state". Their
// stdin, stdout and stderr are /dev/null so a survivor never keeps the
// caller's pipes open; only the pidfile and markers show that it lives.
// The setuid child opens the pidfile before it changes identity and writes
// its line after; its marker is created only if the new UID may create it.
// Intermediate processes (daemonizer, forker) are reaped by their parents;
// zombie children are deliberately never reaped.
//
// Light processes are not escapers, so they record nothing themselves: the
// worker writes their lines. They get the worker's signal dispositions
// through fork and keep ignored ones across exec (the Go runtime resets only
// the signals it handles), which is how --ignore-signals reaches them without
// a Go runtime of their own. The worker reaps them by their own pids as they
// die (on SIGCHLD, never a wait for any child, which would reap the
// zombies).
//
// There is no mode for uninterruptible sleep (state D): it cannot be made
// portably from Go, so the tests that need it freeze processes from outside
// with the cgroup v1 freezer.
//
// Known races: the Go runtime catches SIGTERM from exec until the new
// process calls signal.Ignore, so a TERM sent before a process's pidfile
// line may still kill it (light processes have no such window: they ignore
// from fork on). --setsid fails (exit 70) if the worker already
// leads its process group, as setsid(2) does; --setpgid is then a no-op.
//
// Exit codes: 64 for bad flags (one line on stderr) and for modes this OS
// does not support (--migrate-cgroup and --leader-exit need Linux,
// --light-tree Linux or macOS, the session, group, signal, /proc and
// identity modes a Unix, the Windows modes Windows); 75 when --breakaway was
// refused; 70
// when a requested action fails at run time (a --light-tree fork, say, but
// not a refused cgroup move or setuid, which are logged); --exit CODE; 0
// after --term-exits handled a signal.
//
// A program this module's tests (and benchmarks) run, not a library and not a
// user-facing tool: it exports no Go API, and its command line may change
// with the tests that drive it.
package main
