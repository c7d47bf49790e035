package hold

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

// Signal shutdown of the hold state machines (docs/protocol.md "Election hold",
// "Lock hold", "Signals", "Exit codes" rows 130/143, "Easy to miss" item 12),
// driven through Run's signal channel. The same paths with real signals
// delivered to the built binary are in cmd/internal/holdcli/signal_linux_test.go.

var holdSignals = []struct {
	name string
	sig  os.Signal
	code int
}{
	{"SIGINT", syscall.SIGINT, ExitSIGINT},
	{"SIGTERM", syscall.SIGTERM, ExitSIGTERM},
}

// Before authority a signal ends the hold with 130/143 and no event of its
// own: while waiting as a follower / behind a held lock, and while a request
// is in flight. The lock hold still deletes its session first.
func TestSignalBeforeAuthorityNoEvent(t *testing.T) {
	t.Parallel()
	for _, s := range holdSignals {
		t.Run("election waiting "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			id := f.createElection()
			f.post("/elections/"+id+"/campaign", map[string]any{"candidate_id": "other", "ttl_seconds": 300})
			r := startHold(t, f, id, "agent-a", 30*time.Second)
			r.expectNext(events.Waiting, ReasonFollower)
			r.signals <- s.sig
			sameEvents(t, electionDone(t, r, s.code), events.Waiting)
			require.Zero(t, f.requests("resign"))
		})
		t.Run("election campaign in flight "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			id := f.createElection()
			f.fault(map[string]any{"route": "campaign", "kind": "stall_headers", "no_effect": true})
			r := startHold(t, f, id, "agent-a", 30*time.Second)
			f.waitRequests("campaign", 1)
			r.signals <- s.sig
			sameEvents(t, electionDone(t, r, s.code))
		})
		t.Run("lock waiting "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			holdOther(f, "sig", 60, 0)
			r := startLockHold(t, f, "sig", 30*time.Second)
			r.expectNext(events.Waiting, ReasonHeld)
			r.signals <- s.sig
			sameEvents(t, lockDone(t, r, s.code), events.Waiting)
			require.Equal(t, 1, f.requests("delete_session"))
			require.Zero(t, f.requests("release"))
		})
		t.Run("lock acquire in flight "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			f.fault(map[string]any{"route": "acquire", "kind": "stall_headers"})
			r := startLockHold(t, f, "sig", 30*time.Second)
			f.waitRequests("acquire", 1)
			r.signals <- s.sig
			sameEvents(t, lockDone(t, r, s.code))
			require.Equal(t, 1, f.requests("delete_session"))
			require.Equal(t, "free", lockStatus(f, "sig"), "the effective stalled acquire was undone by the DELETE")
		})
		t.Run("lock session creation in flight "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			f.fault(map[string]any{"route": "create_session", "kind": "stall_headers", "no_effect": true})
			r := startLockHold(t, f, "sig", 30*time.Second)
			f.waitRequests("create_session", 1)
			r.signals <- s.sig
			sameEvents(t, lockDone(t, r, s.code))
			require.Zero(t, f.requests("delete_session"), "there is no session to delete")
		})
	}
}

// During authority a signal releases: one resign (election) or one release
// then one session DELETE (lock), `released signal` with the term and no
// expires_at, exit 130/143, and the server agrees the room/lock is free.
func TestSignalDuringAuthorityReleases(t *testing.T) {
	t.Parallel()
	for _, s := range holdSignals {
		t.Run("election "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			id := f.createElection()
			r := startHold(t, f, id, "agent-a", 30*time.Second)
			leader := r.expectNext(events.Leader, "")
			r.signals <- s.sig
			rel := r.expectNext(events.Released, ReasonSignal)
			require.Equal(t, leader["term"], rel["term"])
			sameEvents(t, electionDone(t, r, s.code), events.Leader, events.Released)
			require.Equal(t, 1, f.requests("resign"))
			_, body := f.get("/elections/"+id, "")
			require.Contains(t, string(body), `"status":"vacant"`)
		})
		t.Run("lock "+s.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			r := startLockHold(t, f, "sig", 30*time.Second)
			acq := r.expectNext(events.Acquired, "")
			r.signals <- s.sig
			rel := r.expectNext(events.Released, ReasonSignal)
			require.Equal(t, acq["term"], rel["term"])
			sameEvents(t, lockDone(t, r, s.code), events.Acquired, events.Released)
			require.Equal(t, 1, f.requests("release"))
			require.Equal(t, 1, f.requests("delete_session"))
			require.Equal(t, "free", lockStatus(f, "sig"))
		})
	}
}

// docs/protocol.md "Easy to miss" item 12, L13: the shutdown has one budget,
// min(--shutdown-timeout, 2 s, remaining authority), covering the resign — or
// the lock release and then the session DELETE. The clock is manual, so the
// test decides exactly when the budget is spent; a stalled server never
// answers.
func TestSignalShutdownBudget(t *testing.T) {
	t.Parallel()
	t.Run("election 2 s cap", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		id := f.createElection()
		f.fault(map[string]any{"route": "resign", "kind": "stall_headers"})
		clk := newManualClock()
		r := startHold(t, f, id, "agent-a", 30*time.Second, withClock(clk), slowRequests(t), func(h *electionHold) { h.ShutdownTimeout = 10 * time.Second })
		r.expectNext(events.Leader, "")
		r.signals <- syscall.SIGINT
		f.waitRequests("resign", 1)
		clk.advance(1999 * time.Millisecond)
		f.steady("resign", 1, 300*time.Millisecond)
		require.Len(t, eventNames(r.out), 1, "still inside the 2 s budget")
		clk.advance(time.Millisecond)
		m := r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
		require.NotContains(t, m, "expires_at")
		sameEvents(t, electionDone(t, r, ExitSIGINT), events.Leader, events.Uncertain)
	})
	t.Run("election shutdown-timeout below 2 s", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		id := f.createElection()
		f.fault(map[string]any{"route": "resign", "kind": "stall_body"})
		clk := newManualClock()
		r := startHold(t, f, id, "agent-a", 30*time.Second, withClock(clk), slowRequests(t), func(h *electionHold) { h.ShutdownTimeout = 500 * time.Millisecond })
		r.expectNext(events.Leader, "")
		r.signals <- syscall.SIGTERM
		f.waitRequests("resign", 1)
		clk.advance(500 * time.Millisecond)
		r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
		sameEvents(t, electionDone(t, r, ExitSIGTERM), events.Leader, events.Uncertain)
	})
	t.Run("election remaining authority", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		id := f.createElection()
		f.fault(map[string]any{"route": "election_renew", "kind": "stall_headers"})
		f.fault(map[string]any{"route": "resign", "kind": "stall_headers"})
		clk := newManualClock()
		r := startHold(t, f, id, "agent-a", 5*time.Second, withClock(clk), slowRequests(t), func(h *electionHold) { h.ShutdownTimeout = 10 * time.Second })
		r.expectNext(events.Leader, "")
		clk.advance(3500 * time.Millisecond) // renewal due (and stalled); 500 ms of authority left
		f.waitRequests("election_renew", 1)
		r.signals <- syscall.SIGINT
		f.waitRequests("resign", 1)
		clk.advance(499 * time.Millisecond)
		f.steady("resign", 1, 300*time.Millisecond)
		require.Len(t, eventNames(r.out), 1)
		clk.advance(time.Millisecond)
		r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
		sameEvents(t, electionDone(t, r, ExitSIGINT), events.Leader, events.Uncertain)
	})
	t.Run("lock release and DELETE share the budget", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		f.fault(map[string]any{"route": "release", "kind": "stall_headers"})
		f.fault(map[string]any{"route": "delete_session", "kind": "stall_headers"})
		clk := newManualClock()
		r := startLockHold(t, f, "budget", 30*time.Second, lockWithClock(clk), lockSlowRequests(t), func(h *lockHold) { h.ShutdownTimeout = 10 * time.Second })
		r.expectNext(events.Acquired, "")
		r.signals <- syscall.SIGINT
		f.waitRequests("release", 1)
		clk.advance(1999 * time.Millisecond)
		f.steady("release", 1, 300*time.Millisecond)
		require.Len(t, eventNames(r.out), 1)
		// The release's budget ends here, and with it the DELETE's: the
		// event follows without the clock moving again.
		clk.advance(time.Millisecond)
		m := r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
		require.NotContains(t, m, "expires_at")
		sameEvents(t, lockDone(t, r, ExitSIGINT), events.Acquired, events.Uncertain)
	})
	t.Run("lock DELETE after a quick release", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		f.fault(map[string]any{"route": "delete_session", "kind": "stall_headers"})
		clk := newManualClock()
		r := startLockHold(t, f, "budget", 30*time.Second, lockWithClock(clk), lockSlowRequests(t), func(h *lockHold) { h.ShutdownTimeout = 10 * time.Second })
		r.expectNext(events.Acquired, "")
		r.signals <- syscall.SIGTERM
		f.waitRequests("delete_session", 1)
		clk.advance(1999 * time.Millisecond)
		f.steady("delete_session", 1, 300*time.Millisecond)
		require.Len(t, eventNames(r.out), 1, "the event waits for the DELETE attempt")
		clk.advance(time.Millisecond)
		// The release was confirmed (null), so it is released although the
		// DELETE never answered.
		r.expectNext(events.Released, ReasonSignal)
		sameEvents(t, lockDone(t, r, ExitSIGTERM), events.Acquired, events.Released)
	})
}

// docs/protocol.md "Easy to miss" item 12: one attempt. A failed resign/release
// is not retried; the event is uncertain release_unconfirmed and the exit still
// 130/143.
func TestSignalShutdownSingleAttempt(t *testing.T) {
	t.Parallel()
	t.Run("election", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		id := f.createElection()
		f.fault(map[string]any{"route": "resign", "kind": "error", "status": 503})
		r := startHold(t, f, id, "agent-a", 30*time.Second)
		r.expectNext(events.Leader, "")
		r.signals <- syscall.SIGTERM
		r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
		electionDone(t, r, ExitSIGTERM)
		require.Equal(t, 1, f.requests("resign"))
	})
	t.Run("lock", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		f.fault(map[string]any{"route": "release", "kind": "error", "status": 503})
		r := startLockHold(t, f, "once", 30*time.Second)
		r.expectNext(events.Acquired, "")
		r.signals <- syscall.SIGINT
		r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
		lockDone(t, r, ExitSIGINT)
		require.Equal(t, 1, f.requests("release"))
		require.Equal(t, 1, f.requests("delete_session"), "the session DELETE still runs, and frees the lock")
		require.Equal(t, "free", lockStatus(f, "once"))
	})
}
