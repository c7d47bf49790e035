// Command fakehold is a scripted stand-in for the OctoStore hold process
// (`octostore election hold --json` / `octostore lock hold --json`), used as a
// fault injector by the supervisor tests.
//
// A real hold needs a server and only ever emits well-formed, fresh events.
// The supervisor has to be tested against everything else too: stale or
// future authority stamps, numbers rendered as strings, sequence regressions,
// malformed or enormous lines, holds that ignore SIGTERM, holds that leave a
// descendant behind, holds that close stdout and keep running. fakehold lets
// a test script exactly that, one step per argv word, without a shell.
//
// Usage:
//
//	fakehold [flags] STEP...
//
// Flags:
//
//	--kind election|lock     coordination kind (default election)
//	--name NAME              coordination name (default room)
//	--candidate C            candidate_id of election events (default agent;
//	                         never put on lock events)
//	--server URL             server field (default http://127.0.0.1:1)
//	--ignore-signals         ignore SIGTERM, SIGINT and SIGHUP (caught and
//	                         dropped, so spawned processes get default handlers)
//	--on-term MODE           released|uncertain|exit|none (default released):
//	                         what SIGTERM/SIGINT do when signals are not ignored
//	--release-delay DUR      sleep DUR after SIGTERM/SIGINT before the shutdown event,
//	                         like a real hold whose release is a slow round trip
//	--stamps PATH            append "EVENT UNIXNANOS" for each emitted event as it is written
//	--pidfile PATH           append "PID STARTTIME" for itself and for each
//	                         process it spawns (each appends its own line)
//	--descendant-marker PATH spawn a TERM/INT/HUP-immune descendant at start that
//	                         creates PATH after --descendant-after, then lives on
//	--descendant-after DUR   delay before the descendant creates its marker
//	                         (default 0s)
//
// Steps (one argv word each; option fields after ':' separated by commas):
//
//	emit:EVENT[,k=v...]      one hold event as compact JSON (see below)
//	raw:TEXT                 TEXT + "\n" verbatim (TEXT may hold ',' and ':')
//	huge:N                   a line of N 'x' bytes + "\n"
//	sleep:DUR                sleep a Go duration
//	waitfile:PATH[,timeout=DUR]
//	                         poll every 10ms until PATH exists (default timeout
//	                         30s; on timeout exit 3)
//	exit:CODE                exit with CODE (0..255)
//	closeout                 close stdout and keep running
//	forever                  block forever (also the default after the last step)
//
// emit options: term=N, budget=MS, wall_age=MS, cont_age=MS, future=MS,
// seq=N, kind=K, name=NAME, candidate=C, reason=CODE, key=FENCINGKEY, retry=MS, drop=FIELD
// (repeatable), string=FIELD (repeatable), schema=N, extra=1.
//
// Keys are written in the hold's order: schema_version, sequence, event,
// kind, name, server, candidate_id, term, fencing_key, expires_at, retry_after_ms,
// reason_code, authority_remaining_ms, authority_observed_unix_ms,
// authority_observed_continuous_ms, observed_at (then x_extra with extra=1).
// Sequence starts at 1 and increments per emitted event; seq=N sets this
// event's sequence and the next one continues from N+1.
//
// Fields present by default (beyond schema_version, sequence, event, kind,
// name, server, candidate_id for elections, observed_at):
//
//	waiting                  retry_after_ms (1000), reason_code follower|held
//	leader acquired renewed  term, expires_at; the three authority_* fields only
//	                         with budget=MS
//	lost                     term, expires_at (if an earlier authority event set
//	                         one), reason_code term_changed|lease_changed
//	released                 term (if known), reason_code signal
//	uncertain                term and expires_at (if known), reason_code
//	                         renewal_deadline_exceeded once a term is known,
//	                         initial_authority_deadline_exceeded before
//	error                    reason_code acquire_timeout
//	anything else            nothing extra
//
// The term starts at 1 and term=N sets it for this and later events; it is
// "known" once an event carried it or term= was given. reason=, retry= and
// term= add their field to any event. candidate= puts candidate_id on an event
// even for kind lock. budget=MS stamps authority_observed_unix_ms (wall clock
// ms), then authority_observed_continuous_ms (Linux CLOCK_BOOTTIME, macOS
// CLOCK_MONOTONIC_RAW, Windows GetTickCount64), and authority_remaining_ms=MS.
// wall_age and cont_age subtract from those stamps (a stale event), future adds
// to both (an event from the future); observed_at is the same wall sample with
// the same wall shift. drop=FIELD omits a key, string=FIELD renders a numeric
// key as a JSON string, schema=N sets schema_version, extra=1 appends
// "x_extra":{"a":[1,2]}.
//
// Signals: on SIGTERM (exit 143) or SIGINT (exit 130), --on-term released
// emits a released event (current term, reason_code signal) if a leader or
// acquired event was emitted, uncertain emits uncertain with reason_code
// release_unconfirmed, exit prints nothing, none keeps running. SIGHUP keeps
// its default (death), as in the real hold, unless --ignore-signals.
// Windows has console control events instead, mapped as the supervisor maps
// them: CTRL_C acts as SIGINT (130), CTRL_BREAK and CTRL_CLOSE as SIGTERM
// (143); --ignore-signals claims and drops all three. The descendant there
// ignores them the same way and has NUL for stdio.
//
// Every line is written with one write(2) on fd 1 so it reaches the
// supervisor at once and is never interleaved with a signal-time event.
// The descendant has stdin/stdout/stderr on /dev/null so that it never keeps
// the events pipe open: a hold that exits or runs closeout produces EOF even
// while its descendant survives.
//
// Exit codes: 64 for bad flags or steps and for a mode this OS does not
// support (pidfile start times and descendants need Linux, macOS or Windows,
// where START is the creation time in 100 ns units since 1601; budget
// needs a continuous clock); 3 for a waitfile timeout; exit:CODE; 143/130 on
// signals.
//
// A program this module's tests (and benchmarks) run, not a library and not a
// user-facing tool: it exports no Go API, and its command line may change
// with the tests that drive it.
package main
