// Command floor is the physical limit the supervisor's teardown is compared
// with in make bench: no guardian, no shims, no proof. It starts a worker and
// a hold, each in a process group of its own, reads the hold's stdout, and at
// the first line that says "lost" sends SIGTERM to both groups (kill(-pgid)),
// waits for both processes (waitpid) and exits.
//
// Usage:
//
//	floor [--kill] WORKER -- HOLD [ARGS...]
//
// With --kill it is the floor for killing a whole tree: it becomes a child
// subreaper, sends SIGKILL to the worker's group instead, and reaps until it has no children left,
// so it exits once every process of both groups is gone (what the kernel
// needs to end and reap that many processes). That takes a subreaper
// (Linux); elsewhere orphans go to init and it waits for its children only.
//
// It is a benchmark instrument, not a supervisor: descendants that leave the
// two groups are not looked for.
//
// A program this module's tests (and benchmarks) run, not a library and not a
// user-facing tool: it exports no Go API, and its command line may change
// with the tests that drive it.
package main
