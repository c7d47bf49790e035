// Package contain is the supervisor: the lifecycle that gates a worker on validated
// authority, the guardian process that holds the armed deadline and the containers,
// the shims that root each protected group, and the teardown that kills a whole
// process tree and proves it empty before anything is reported.
//
// It must never print a terminal line before containment is proven, never signal a
// pid that could have been recycled, never fork or exec on the teardown path, and
// never keep lifecycle state anywhere a worker can reach (files, named pipes, the
// environment): state lives in memory and crosses process boundaries only through
// anonymous descriptors inherited at start (socketpairs for every message and
// for a waiting helper's start, a pipe for the hold's bearer token), and
// crosses the exec into the lean helper image only in an anonymous memfd.
//
// # Processes and their files
//
// On unix a run is four kinds of process, below each other in this order.
// The supervisor, the guardian and the shims are this package's code; so are
// the three helpers that may stand between a shim and its command. Each helper
// is this binary or the lean helper image (cmd/octostore-helper) started
// again with a hidden argv[1] that HelperMain maps to its Main
// (helpermain.go); the embedded hold's root alone is dispatched by
// cmd/internal/holdroot. A file listed under one process may also run in
// those below it. Shared by all of them: wire.go (msg, the one message type,
// and the order of the messages), spawn_unix.go (how a helper is started:
// argv, descriptors, environment, and what it does first), threads_unix.go
// (the thread reserve) and reap_unix.go (the reaper).
//
//	supervisor  Supervise or Run, called by cmd/octostore-supervisor; as root
//	            continued in the lean image (SuperviseArg)
//	  lifecycle.go       the run: validates the hold's events, arms each deadline,
//	                     gates the worker, orders the teardown, picks the exit code
//	  config.go, run.go  Config, RunConfig, Report, exit codes, run's summary
//	  supervise_unix.go  the unix host: starts the guardian (launchGuardian) and
//	                     asks it; backstop timer; fallback teardown; startup sweep
//	  run_unix.go        `run` on the same guardian
//	  link_unix.go       requests to the guardian, its notifications; a stopped
//	                     guardian (awaitstop_*.go)
//	  hostgate.go        the name's interlock, host lock and survivor record
//	  env.go, env_*.go   the worker's and the hold's environments
//	  ready_*.go, rundir_unix.go, workeruser*.go
//	                     the worker's ready file, root's runtime directory,
//	                     --worker-user claims
//	  lean_linux.go      hands the run over to the lean image (handover)
//	  exe_*.go, helpercache_linux.go
//	                     which image the helpers start from; the image cache
//	  backend*.go, limits*.go, isolate.go, doctor*.go
//	                     resolved before a run starts (ResolveBackend,
//	                     ResolveIsolation); what doctor reports
//	guardian    GuardianMain (GuardianArg); one per run, in its own session
//	  guardian_unix.go   the groups and their roots, the armed deadline
//	                     (deadline.go), the supervisor's requests, expiry
//	  sweep_unix.go      teardown: walk, TERM, grace, STOP and KILL, proof (the
//	                     shims' own and the supervisor's fallback too)
//	  cgroup_linux.go    the run's cgroup and its leaves: create, kill, remove
//	                     (the supervisor's startup sweep and fallback too)
//	  family_*.go        macOS: a group followed beyond parent links
//	  relay_unix.go      a --worker-user worker's output, copied
//	shim        ShimMain (ShimArg); one per group, its root and child subreaper
//	  shim_unix.go       starts the group's program when told (startProgram),
//	                     reaps, reports its exit; kills its tree when orphaned
//	  isolate_*.go, join_linux.go
//	                     how the program is started: credentials, Landlock,
//	                     PID namespace, born in its leaf through clone3
//	  holdroot_unix.go   HoldRootMain (HoldRootArg): in a shim's place, the
//	                     embedded hold roots its own group and speaks the shim's
//	                     side of the protocol
//	commands    the hold command and the worker, started by their shim; between
//	            them and the shim, for a moment or for the worker's life:
//	  join_linux.go      JoinMain (JoinArg): enters the leaf where clone3 is
//	                     refused, takes the worker's identity, execs the program
//	  isolate_linux.go   PidInitMain (PidInitArg): a --private-pids worker's
//	                     namespace init: mounts its /proc, starts the worker,
//	                     reaps the namespace
//	  prestart_linux.go  PrestartMain (PrestartArg): the worker's pre-start
//	                     helper: enters the fence ahead of the gate, forks the
//	                     worker as the shim's child at it, and exits
//
// Windows has no guardian and no shims: the supervisor holds a job object per
// group (host_windows.go, supervise_windows.go, run_windows.go), and the
// kernel kills both groups when the supervisor's handles close.
//
// # The configuration on its way to the guardian
//
// A run's configuration takes four forms, each the part of the one before that
// the next process needs, in a form that can reach it:
//
//   - Config (RunConfig for run): the command line resolved by
//     cmd/octostore-supervisor, with the files the run holds open (the
//     interlock, the survivor record), its writers and test hooks. Only the
//     supervisor has it.
//   - handover (lean_linux.go): Config's plain fields as JSON in a memfd,
//     and its open files as the numbers of descriptors the exec keeps. It
//     exists because execve keeps the process's descriptors but none of its
//     Go values: a root supervisor continues in the lean image, which does
//     not link the authorities' clients, before anything of the run exists.
//   - init, supervisor to guardian (msg in wire.go): what containment needs
//     and nothing of the authority: both programs' argv and environment, the
//     backend, the run's cgroup name, the grace and proof bound, the worker's
//     isolation, the embedded hold's image descriptor. The guardian is a
//     fresh process: the run reaches it only as this message and the
//     descriptors it inherits. The bearer token is not in it but on the
//     hold's stdin, a pipe the guardian passes on unread.
//   - init, guardian to shim (msg): one group's program: its argv,
//     environment and isolation, whether it waits for start, and its cgroup
//     leaf (open as fd 6). A shim roots one group and learns nothing of the
//     other; the armed deadline reaches it only in start (FireMs), for a last
//     check before the exec. A gated worker with a waiting helper is started
//     by the guardian itself, through the helper's start channel (StartFd),
//     which the shim only passes on.
//
// Below a shim, the helpers get their part as argv words (JoinArg,
// PidInitArg, PrestartArg), and a waiting helper the worker's added
// environment as JSON on its start channel.
//
// Its exported API serves this module's supervisor (cmd/octostore-supervisor)
// and tests; it is internal to this module, with no compatibility promise.
package contain
