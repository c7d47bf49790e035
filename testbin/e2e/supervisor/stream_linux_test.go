package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

const bound = 15 * time.Second // generous: proves termination, not speed

// B1: a leader for another candidate is refused and the worker never starts.
func TestB1CandidateMismatch(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=7,budget=5000,candidate=intruder"}})
	require.Equal(t, 70, r.wait(bound))
	require.Contains(t, r.stderr(), "does not match the expected election candidate")
	require.Empty(t, r.events())
	requireNeverRan(t, r)
}

// B2: a sequence that does not increase after authority stops the worker.
func TestB2SequenceRegression(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=7,budget=5000", "waitfile:{dir}/log", "emit:renewed,term=7,budget=5000,seq=1"}})
	require.Equal(t, 70, r.wait(bound))
	require.Contains(t, r.stderr(), "sequence did not increase")
	require.Equal(t, []string{"leader"}, r.events())
}

// B3: gaps in the sequence are fine and are passed through.
func TestB3SequenceGaps(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting,seq=5", "emit:leader,term=7,budget=5000,seq=9", "waitfile:{dir}/log", "emit:released,term=7,seq=10"}})
	require.Equal(t, 0, r.wait(bound))
	require.Equal(t, []string{"waiting", "leader", "released"}, r.events())
	require.EqualValues(t, 5, r.line("waiting")["sequence"])
	require.EqualValues(t, 10, r.line("released")["sequence"])
}

// B4-B7, B9-B11: protocol violations after or before authority end in 70 with no
// terminal line, and everything is contained.
func TestBProtocolViolations(t *testing.T) {
	t.Parallel()
	leader := "emit:leader,term=7,budget=8000"
	cases := []struct {
		name   string
		kind   string
		hold   []string
		want   string
		worker bool // the worker had started
	}{
		{"B4 malformed after authority", "", []string{leader, "waitfile:{dir}/log", "raw:not json"}, "malformed or unsupported hold event", true},
		{"B4 huge line", "", []string{leader, "waitfile:{dir}/log", "huge:70000"}, "longer than the supported maximum", true},
		{"B4 line one byte over the limit", "", []string{leader, "waitfile:{dir}/log", "huge:" + strconv.Itoa(events.MaxLineBytes+1)}, "longer than the supported maximum", true},
		// A line that never ends fails at the limit, well before the 8 s
		// deadline would end the run with 20.
		{"B4 endless line", "", []string{leader, "waitfile:{dir}/log", "endless"}, "longer than the supported maximum", true},
		{"B4 endless line before authority", "", []string{"endless"}, "longer than the supported maximum", false},
		{"B5 schema 2", "", []string{"emit:waiting,schema=2"}, "malformed or unsupported hold event", false},
		{"B6 unknown event", "", []string{leader, "waitfile:{dir}/log", "emit:paused,term=7"}, "unknown hold event 'paused'", true},
		{"B7 wrong name", "", []string{"emit:waiting,name=other"}, "does not match the expected coordination target", false},
		{"B7 wrong kind", "", []string{"emit:waiting,kind=lock"}, "does not match the expected coordination target", false},
		{"B7 lock with candidate", "lock", []string{"emit:waiting,candidate=agent"}, "lock hold event unexpectedly contains a candidate identity", false},
		{"B9 duplicate leader", "", []string{leader, "waitfile:{dir}/log", leader}, "duplicate authority-start event", true},
		{"B10 term zero", "", []string{"emit:leader,term=0,budget=5000"}, "authority term must be positive", false},
		{"B10 term missing", "", []string{"emit:leader,budget=5000,drop=term"}, "missing a numeric fencing term", false},
		{"B11 renewed term change", "", []string{leader, "waitfile:{dir}/log", "emit:renewed,term=8,budget=5000"}, "renewed event changed or omitted the fencing term", true},
		{"B11 released other term", "", []string{leader, "waitfile:{dir}/log", "emit:released,term=8"}, "released event changed the fencing term", true},
		{"B11 lost without term", "", []string{leader, "waitfile:{dir}/log", "emit:lost,drop=term"}, "lost event changed the fencing term", true},
		{"B11 renewed before authority", "", []string{"emit:renewed,term=7,budget=5000"}, "renewed event arrived before authority", false},
		{"B16 leader on a lock", "lock", []string{"emit:leader,term=7,budget=5000"}, "does not belong to a lock hold", false},
		{"B16 acquired on an election", "", []string{"emit:acquired,term=7,budget=5000"}, "does not belong to an election hold", false},
		{"C2 freshness fields missing", "", []string{"emit:leader,term=7,budget=5000,drop=authority_observed_unix_ms,drop=authority_observed_continuous_ms"}, "missing an emission time", false},
		{"C5 numbers as strings", "", []string{"emit:leader,term=7,budget=5000,string=authority_remaining_ms"}, "malformed or unsupported hold event", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{kind: c.kind, worker: "--ignore-signals --child", hold: c.hold})
			require.Equal(t, 70, r.wait(bound), r.stderr())
			require.Contains(t, r.stderr(), c.want)
			for _, e := range r.events() {
				require.Contains(t, []string{"waiting", "leader"}, e, "no terminal line after a protocol violation")
			}
			if !c.worker {
				requireNeverRan(t, r)
			}
		})
	}
}

// B8: unknown additive fields are ignored.
func TestB8ExtraFields(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting,extra=1", "emit:lost,reason=lease_not_current"}})
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"waiting", "lost"}, r.events())
}

// B12: waiting never starts the worker; a terminal event before authority is printed.
func TestB12WaitingNeverStartsWorker(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting", "emit:waiting", "emit:uncertain,reason=initial_authority_deadline_exceeded"}})
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"waiting", "waiting", "uncertain"}, r.events())
	require.Equal(t, "initial_authority_deadline_exceeded", r.line("uncertain")["reason_code"])
	requireNeverRan(t, r)
}

// B13: waiting after authority is doubt: 20, no line, worker contained.
func TestB13WaitingAfterAuthority(t *testing.T) {
	t.Parallel()
	r := start(t, sc{worker: "--ignore-signals --grandchild-setsid", hold: []string{"emit:leader,term=7,budget=8000", "waitfile:{dir}/log", "emit:waiting"}})
	require.Equal(t, 20, r.wait(bound))
	require.Contains(t, r.stderr(), "hold returned to waiting after acquisition")
	require.Equal(t, []string{"leader"}, r.events())
}

// B14: terminal events before authority. released before any authority is a
// deliberate change: 70, never 0.
func TestB14TerminalBeforeAuthority(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:released,reason=signal"}})
	require.Equal(t, 70, r.wait(bound))
	require.Equal(t, []string{"released"}, r.events())
	requireNeverRan(t, r)

	r = start(t, sc{hold: []string{"emit:lost,reason=lease_not_current"}})
	require.Equal(t, 20, r.wait(bound))
	require.Equal(t, []string{"lost"}, r.events())
	requireNeverRan(t, r)
}

// B15: error acquire_timeout exits 11 (the hold's meaning); any other error 70.
func TestB15ErrorEvents(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:waiting", "emit:error,reason=acquire_timeout", "exit:11"}})
	require.Equal(t, 11, r.wait(bound))
	require.Equal(t, []string{"waiting", "error"}, r.events())
	require.Equal(t, "acquire_timeout", r.line("error")["reason_code"])
	c := r.line("error")["containment"].(map[string]any)
	require.Equal(t, true, c["proven_empty"])
	requireNeverRan(t, r)

	r = start(t, sc{kind: "lock", hold: []string{"emit:error,reason=forbidden", "exit:64"}})
	require.Equal(t, 70, r.wait(bound))
	require.Equal(t, []string{"error"}, r.events())
}

// B17: release is terminal; a later leader is never read and the worker started once.
func TestB17ReleaseIsTerminal(t *testing.T) {
	t.Parallel()
	r := start(t, sc{hold: []string{"emit:leader,term=7,budget=3000", "waitfile:{dir}/log", "emit:released,term=7,reason=signal", "emit:leader,term=8,budget=3000"}})
	require.Equal(t, 0, r.wait(bound))
	require.Equal(t, []string{"leader", "released"}, r.events())
	// Counted in the worker's log, not its pidfile: the log line is the first
	// thing the worker does and what the hold waits for before it releases; its
	// pidfile line comes after its signal set-up, which a teardown that follows
	// the release at once can pre-empt (the pidfile was empty in 1 CI run).
	log, err := os.ReadFile(filepath.Join(r.dir, "log"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(log), "started "), "the worker started exactly once:\n%s", log)
}
