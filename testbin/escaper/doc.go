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
//	                        /proc/PID/stat on Linux, p_starttime in µs on macOS)
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
//	--tamper PATH           probe the supervisor's state and record one line per
//	                        attempt in PATH: "ok WHAT" or "fail WHAT: ERR"
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
//
// Order of a worker run: "started" log line; --setsid/--setpgid; signal
// setup; pidfile line; --env-out; --stdout-forge; --tamper; spawns (and the
// --tree wait); then the --marker, --touch-ready and --exit timers run
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
// Intermediate processes (daemonizer, forker) are reaped by their parents;
// zombie children are deliberately never reaped.
//
// Known races: the Go runtime catches SIGTERM from exec until the new
// process calls signal.Ignore, so a TERM sent before a process's pidfile
// line may still kill it. --setsid fails (exit 70) if the worker already
// leads its process group, as setsid(2) does; --setpgid is then a no-op.
//
// Exit codes: 64 for bad flags (one line on stderr) and for modes this OS
// does not support; 70 when a requested action fails at run time; --exit
// CODE; 0 after --term-exits handled a signal.
package main
