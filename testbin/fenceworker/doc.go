// Command fenceworker is a cooperative protected worker for the safety tests
// of the authorities: it writes to a fenced log (internal/testkit/fencelog) every
// 10 ms for as long as it runs, so that the log shows when each holder's
// worker was working, and the log's store, which rejects terms lower than the
// highest it accepted, shows whether two ever worked at once.
//
//	fenceworker LOG [ROLE]
//
// LOG is the fenced log, which must exist; ROLE labels the lines (default
// "worker"), e.g. with the agent's name. The term comes from
// OCTOSTORE_FENCING_TERM, as the supervisor gives it. The worker writes a
// "start" line, an "hb" line every 10 ms (a rejected one is the finding and
// does not stop it, as a worker that does not know it was deposed would go on),
// and on SIGTERM, SIGINT or SIGHUP a "stop" line, then exits 0.
//
// Exit codes: 64 for bad arguments or environment (one line on stderr), 70
// when the log cannot be written. Linux only (elsewhere it exits 64).
//
// A program this module's tests (and benchmarks) run, not a library and not a
// user-facing tool: it exports no Go API, and its command line may change
// with the tests that drive it.
package main
