// Command attacker is a hostile protected worker for the supervisor's
// isolation tests. From inside the worker it tries, as an attacker would, to
// outlive its authority or to fake authority for someone else, and it writes
// down everything it could and could not do.
// It also has a cooperative mode, the "fenced" worker, so that every worker of
// a test writes to the same fenced log the same way.
//
// The supervisor starts a worker with no arguments, so all configuration
// comes from the environment:
//
//	ATTACKER_MODE    "attack" or "fenced" (required), or one of the
//	                 side attacks below
//	ATTACKER_FENCE   the fenced log (required): every worker appends its
//	                 fencing term ($OCTOSTORE_FENCING_TERM) there through
//	                 internal/testkit/fencelog, which, under an exclusive flock of the file,
//	                 rejects a term lower than the highest one accepted so
//	                 far, as a fenced store would. One line per write:
//	                 "ok|reject WHAT TERM BOOTTIME_NS PID ROLE", WHAT being
//	                 start, hb (heartbeat) or stop, ROLE the mode
//	ATTACKER_GO      attack mode: wait until this file exists, then read the
//	                 pids it lists (space separated): the roots of the process
//	                 trees that are fair game, normally the test's supervisors
//	ATTACKER_REPORT  attack mode: where the JSON report is written (replaced
//	                 atomically through PATH.tmp) once the attack is over
//	ATTACKER_STATE_DIRS  attack mode: colon-separated directories of local
//	                 authority state to tamper with
//
// Fair game. The attacker touches only processes whose chain of parents
// (read from /proc/PID/stat, which every user may read) reaches one of the
// roots, and never its own tree. Every signal goes through a pidfd checked
// against the start time it scanned (platform.ProcReader.Signal), so a
// recycled pid is never hit. What it sees beyond that is only counted.
//
// Attack mode, in order, each attempt recorded in the report:
//
//  1. stop: SIGSTOP every fair-game process. Those of its own supervisor's
//     tree (the root that is its own ancestor) stay stopped: nothing is left
//     to enforce a deadline on it. Those of any other tree (a rival
//     candidate's) are sent SIGCONT again at once, so that the rival acts on
//     what is forged next.
//  2. open: open /proc/PID/fd/0, 1 and 2 of every fair-game process for
//     writing and, where that works, write one well-formed hold line: on its
//     own side a "renewed" for its own term (repeated every second while it
//     lives, into every own-side hold's stdout it opened, to keep extending
//     its own deadline), on a rival's side a "leader" ("acquired" for a lock)
//     with a higher term, so that the rival's supervisor starts its worker
//     with no authority at all. Kind, name, candidate and server come from
//     the side's embedded hold command line (__octostore-hold).
//  3. environ: read /proc/PID/environ of every fair-game process, looking
//     for OCTOSTORE_TOKEN; the report carries the SHA-256 of a value found,
//     never the value.
//  4. files: walk every ATTACKER_STATE_DIRS directory; rewind a "term"
//     counter to 1, overwrite "*.holder" records with a forged holder, and
//     unlink every other file (interlocks, survivor records), each recorded.
//  5. report, then heartbeat: a fenced "hb" line every 20 ms until killed.
//     SIGTERM, SIGINT and SIGHUP are ignored from the start: a hostile worker
//     stays as long as it can.
//
// Fenced mode: a "start" line, a heartbeat every 20 ms, and on SIGTERM (or
// SIGINT, SIGHUP) a "stop" line and exit 0.
//
// Side attacks on what runs share on a host (side_linux.go), each writing its
// attempts to ATTACKER_REPORT, a line each: "chown-race", a local user's, swaps
// every octostore-ready-* directory created in ATTACKER_WATCH for a symlink to
// ATTACKER_TARGET and runs until killed; "ready-thief", a worker, creates the
// ready files of other runs wherever it can find them; "stderr", a worker,
// truncates, probes, reads and writes its stderr.
//
// Exit codes: 64 for a bad environment (one line on stderr), 70 when the
// fenced log or the report cannot be written. The attack mode exits only
// when killed. Linux only (elsewhere it exits 64).
//
// A program this module's tests (and benchmarks) run, not a library and not a
// user-facing tool: it exports no Go API, and its command line may change
// with the tests that drive it.
package main
