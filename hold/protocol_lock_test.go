package hold

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

// Lock-hold protocol tests (docs/protocol.md "Lock hold", "Easy to miss",
// "Exit codes"). See protocol_index_test.go for the coverage index.

func lockDone(t *testing.T, r *lockRun2, code int) []string {
	t.Helper()
	names := r.finish(code)
	checkAllShapes(t, events.Lock, r.out)
	return names
}

func lockDiag(h *lockHold) string { return h.Diag.(*bytes.Buffer).String() }

// holdOther makes "another holder" (same token, no session: a different
// owner) hold name for ttl seconds and returns its lease id.
func holdOther(f *fake, name string, ttl int, delaySecs int) string {
	f.t.Helper()
	m := postAuthBody(f, "/locks/"+EncodeSegment(name)+"/acquire", map[string]any{"ttl_seconds": ttl, "lock_delay_seconds": delaySecs})
	require.Equal(f.t, "acquired", m["status"])
	return m["lease_id"].(string)
}

// lockStatus is the lock's status as the server sees it.
func lockStatus(f *fake, name string) string {
	f.t.Helper()
	code, body := f.get("/locks/"+EncodeSegment(name), lockTestToken)
	require.Equal(f.t, 200, code, "%s", body)
	var m struct {
		Status string `json:"status"`
	}
	require.NoError(f.t, json.Unmarshal(body, &m))
	return m.Status
}

// secretsOf collects the session and lease ids the hold used, from the
// authority's log of what it sent.
func secretsOf(t *testing.T, f *fake) []string {
	t.Helper()
	var out []string
	for _, rec := range f.records("") {
		var b struct {
			SessionID string `json:"session_id"`
			LeaseID   string `json:"lease_id"`
		}
		if json.Unmarshal([]byte(rec.Body), &b) == nil {
			for _, s := range []string{b.SessionID, b.LeaseID} {
				if s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// docs/protocol.md "Easy to miss" item 2: failures after authority are retried
// without `waiting`.
func TestProtocolLockNoWaitingAfterAuthority(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 200, "count": 1})
	f.fault(map[string]any{"route": "lock_renew", "kind": "error", "status": 503, "count": 1})
	f.fault(map[string]any{"route": "lock_renew", "kind": "error", "status": 409, "code": "conflict", "count": 1, "skip": 1})
	r := startLockHold(t, f, "no-waiting", 30*time.Second)
	r.expectNext(events.Acquired, "")
	r.expectNext(events.Renewed, "")
	r.signals <- syscall.SIGTERM
	r.expectNext(events.Released, ReasonSignal)
	sameEvents(t, lockDone(t, r, ExitSIGTERM), events.Acquired, events.Renewed, events.Released)
	require.Equal(t, 3, f.requests("lock_renew"))
	require.Equal(t, 1, f.requests("acquire"))
}

// docs/protocol.md "Easy to miss" item 3, "Authority budget": the budget runs
// from the acquire request's start, and a lock hold's budget is also bounded by
// the session confirmation deadline (24 s from the session request), whatever
// the lock TTL.
func TestProtocolLockAuthorityFromRequestStart(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "delay", "delay_ms": 1500, "count": 1})
	r := startLockHold(t, f, "slow", 3600*time.Second)
	acq := r.expectNext(events.Acquired, "")
	require.LessOrEqual(t, acq["authority_remaining_ms"].(float64), 22500.0, "24 s session bound less the 1.5 s the answer took")
	require.Greater(t, acq["authority_remaining_ms"].(float64), 0.0)
	r.signals <- syscall.SIGINT
	r.expectNext(events.Released, ReasonSignal)
	lockDone(t, r, ExitSIGINT)
}

// docs/protocol.md "Easy to miss" item 3, "Clocks": a suspend (continuous clock
// jumps, scheduler frozen) past the session confirmation deadline is noticed at
// the next poll, both while holding (uncertain with term and expires_at) and
// while waiting (uncertain without a term).
func TestProtocolLockSuspendNoticedOnContinuousClock(t *testing.T) {
	t.Parallel()
	t.Run("holding", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		clk := newManualClock()
		r := startLockHold(t, f, "suspend", 3600*time.Second, lockWithClock(clk))
		acq := r.expectNext(events.Acquired, "")
		require.Equal(t, 24000.0, acq["authority_remaining_ms"], "the session bound, not 0.8 × 3600 s")
		clk.suspend(25 * time.Second)
		u := r.expectNext(events.Uncertain, reasonSessionConfirmationDeadline)
		require.Equal(t, acq["term"], u["term"])
		require.Equal(t, acq["expires_at"], u["expires_at"])
		sameEvents(t, lockDone(t, r, ExitLost), events.Acquired, events.Uncertain)
		require.Zero(t, f.requests("keepalive"), "no keepalive once the session can no longer be vouched for")
		require.Equal(t, 1, f.requests("delete_session"))
	})
	t.Run("waiting", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		holdOther(f, "suspend", 60, 0)
		clk := newManualClock()
		r := startLockHold(t, f, "suspend", 30*time.Second, lockWithClock(clk))
		r.expectNext(events.Waiting, ReasonHeld)
		clk.suspend(25 * time.Second)
		u := r.expectNext(events.Uncertain, reasonSessionConfirmationDeadline)
		require.NotContains(t, u, "term")
		sameEvents(t, lockDone(t, r, ExitLost), events.Waiting, events.Uncertain)
		require.Equal(t, 1, f.requests("delete_session"))
	})
}

// docs/protocol.md "Easy to miss" item 4, L3 (lock half): the acquisition
// deadline bounds a stalled acquire (headers or body); the session is deleted
// before the error event.
func TestProtocolLockAcquireTimeoutCapsStalls(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"stall_headers", "stall_body"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			f.fault(map[string]any{"route": "acquire", "kind": kind})
			start := time.Now()
			r := startLockHold(t, f, "stall", 30*time.Second, func(h *lockHold) { h.AcquireTimeout = durPtr(300 * time.Millisecond) })
			r.expectNext(events.Error, ReasonAcquireTimeout)
			require.Less(t, time.Since(start), 5*time.Second)
			sameEvents(t, lockDone(t, r, ExitAcquireTimeout), events.Error)
			require.Equal(t, 1, f.requests("delete_session"))
			// The stalled acquire took effect; deleting the session freed it.
			require.Equal(t, "free", lockStatus(f, "stall"))
		})
	}
}

// docs/protocol.md "Easy to miss" item 4, L10 (lock half): a stalled lease
// renewal is cut off by the lease safety deadline: uncertain
// renewal_deadline_exceeded, session deleted.
func TestProtocolLockRenewalDeadlineCapsStalls(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"stall_headers", "stall_body"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			f.fault(map[string]any{"route": "lock_renew", "kind": kind})
			clk := newManualClock()
			r := startLockHold(t, f, "renew-stall", 5*time.Second, lockWithClock(clk), lockSlowRequests(t))
			acq := r.expectNext(events.Acquired, "")
			require.Equal(t, 4000.0, acq["authority_remaining_ms"])
			clk.advance(2500 * time.Millisecond)
			f.waitRequests("lock_renew", 1)
			clk.advance(1499 * time.Millisecond)
			f.steady("lock_renew", 1, 300*time.Millisecond)
			require.Len(t, eventNames(r.out), 1)
			clk.advance(time.Millisecond)
			u := r.expectNext(events.Uncertain, ReasonRenewalDeadlineExceeded)
			require.Equal(t, acq["term"], u["term"])
			sameEvents(t, lockDone(t, r, ExitLost), events.Acquired, events.Uncertain)
			require.Equal(t, 1, f.requests("delete_session"))
		})
	}
}

// docs/protocol.md "Easy to miss" item 4: --request-timeout bounds session
// creation and acquire too: each stall becomes a retryable transport_error,
// then the lock is acquired.
func TestProtocolLockRequestTimeoutBoundsRequests(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "stall_headers", "count": 1, "no_effect": true})
	f.fault(map[string]any{"route": "acquire", "kind": "stall_body", "count": 1})
	r := startLockHold(t, f, "timeouts", 30*time.Second, func(h *lockHold) { h.Client = newClientFor(t, f.url, stallTimeout) })
	r.expectNext(events.Waiting, CodeTransportError)
	r.expectNext(events.Waiting, CodeTransportError)
	acq := r.expectNext(events.Acquired, "")
	r.signals <- syscall.SIGINT
	rel := r.expectNext(events.Released, ReasonSignal)
	require.Equal(t, acq["term"], rel["term"])
	sameEvents(t, lockDone(t, r, ExitSIGINT), events.Waiting, events.Waiting, events.Acquired, events.Released)
	require.Equal(t, 2, f.requests("create_session"))
	require.Equal(t, 2, f.requests("acquire"), "the re-acquire of a stalled (but effective) acquire is idempotent")
}

// docs/protocol.md "Easy to miss" item 5, "Lock hold" steps 5–7: an `acquired`
// answer that completes after the lease safety deadline, after the acquisition
// deadline, or with a budget that floors to 0, is not authority: uncertain /
// error, the session is deleted, and the lock it briefly held is free again.
func TestProtocolLockLateSuccessIsNotAuthority(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		ttl     time.Duration
		acquire *time.Duration
		late    time.Duration
		event   string
		reason  string
		code    int
	}{
		{"after the safety deadline", time.Second, nil, 2 * time.Second, events.Uncertain, ReasonInitialAuthorityDeadline, ExitLost},
		{"after the acquisition deadline", 30 * time.Second, durPtr(3 * time.Second), 5 * time.Second, events.Error, ReasonAcquireTimeout, ExitAcquireTimeout},
		{"budget floors to zero", 5 * time.Second, nil, 3999500 * time.Microsecond, events.Uncertain, ReasonInitialAuthorityDeadline, ExitLost},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			clk := newManualClock()
			r := startLockHold(t, f, "late", c.ttl, lockWithClock(clk), func(h *lockHold) {
				h.AcquireTimeout = c.acquire
				arriveLate(t, h.Client, clk, "/acquire", c.late)
			})
			m := r.expectNext(c.event, c.reason)
			require.NotContains(t, m, "term")
			sameEvents(t, lockDone(t, r, c.code), c.event)
			require.Equal(t, 1, f.requests("delete_session"))
			require.Equal(t, "free", lockStatus(f, "late"))
		})
	}
}

// L5 (lock half): an acquire answered after 1.1 s with --ttl 1 (safety
// 0.8 s) is never `acquired`.
func TestProtocolLockLateInitialAuthority(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "delay", "delay_ms": 1100, "count": 1})
	r := startLockHold(t, f, "late-real", time.Second)
	r.expectNext(events.Uncertain, ReasonInitialAuthorityDeadline)
	sameEvents(t, lockDone(t, r, ExitLost), events.Uncertain)
	require.Equal(t, 1, f.requests("delete_session"))
}

// docs/protocol.md "Easy to miss" item 6, L7/L8: a keepalive success naming
// another session proves nothing: before acquisition it is uncertain
// session_identity_mismatch (no term), after it lost session_identity_mismatch
// — never renewed, exit 20, and the ids themselves are never printed.
func TestProtocolLockKeepaliveIdentity(t *testing.T) {
	t.Parallel()
	for _, acquired := range []bool{false, true} {
		name := map[bool]string{false: "before acquisition", true: "after acquisition"}[acquired]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 1, "count": 1})
			f.fault(map[string]any{"route": "keepalive", "kind": "wrong_session_id", "count": 1})
			if !acquired {
				holdOther(f, "ka-id", 60, 0)
			}
			clk := newManualClock()
			r := startLockHold(t, f, "ka-id", 30*time.Second, lockWithClock(clk))
			if acquired {
				acq := r.expectNext(events.Acquired, "")
				require.Greater(t, acq["authority_remaining_ms"].(float64), 0.0)
			} else {
				r.expectNext(events.Waiting, ReasonHeld)
			}
			clk.advance(time.Second)
			var names []string
			if acquired {
				m := r.expectNext(events.Lost, codeSessionIdentityMismatch)
				require.Contains(t, m, "term")
				names = lockDone(t, r, ExitLost)
				sameEvents(t, names, events.Acquired, events.Lost)
			} else {
				m := r.expectNext(events.Uncertain, codeSessionIdentityMismatch)
				require.NotContains(t, m, "term")
				names = lockDone(t, r, ExitLost)
				sameEvents(t, names, events.Waiting, events.Uncertain)
			}
			out := string(bytes.Join(r.out.lines, nil)) + lockDiag(r.hold)
			ids := secretsOf(t, f)
			require.NotEmpty(t, ids)
			for _, id := range ids {
				require.NotContains(t, out, id)
			}
			require.Equal(t, 1, f.requests("delete_session"))
		})
	}
}

// docs/protocol.md "Lock hold" Phase B step 3, "Exit codes" rows 20 and 70:
// keepalive failures while waiting. Retryable → waiting with the code and
// continue; proves loss → uncertain with the code (no term), 20; anything else
// → DELETE, exit 70 with no event.
func TestProtocolLockKeepaliveFailuresBeforeAcquisition(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		fault  map[string]any
		event  string
		reason string
		code   int
	}{
		{"retryable", map[string]any{"status": 503}, events.Waiting, CodeInternalError, 0},
		{"proves loss", map[string]any{"status": 410, "code": "session_expired"}, events.Uncertain, "session_expired", ExitLost},
		{"neither", map[string]any{"status": 409, "code": "conflict", "details": "Conflict: keepalive refused"}, "", "", ExitSoftware},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			holdOther(f, "ka-fail", 60, 0)
			f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 1, "count": 1})
			fault := map[string]any{"route": "keepalive", "kind": "error", "count": 1}
			for k, v := range c.fault {
				fault[k] = v
			}
			f.fault(fault)
			clk := newManualClock()
			r := startLockHold(t, f, "ka-fail", 30*time.Second, lockWithClock(clk))
			r.expectNext(events.Waiting, ReasonHeld)
			clk.advance(time.Second)
			switch {
			case c.code == 0:
				// Local backoff (no guidance in the body): 500 ms × 2^attempt + 5 %.
				w := r.expectNext(events.Waiting, c.reason)
				backoff := w["retry_after_ms"].(float64)
				require.Contains(t, []float64{525, 1050}, backoff)
				clk.advance(time.Duration(backoff) * time.Millisecond)
				f.waitRequests("keepalive", 2)
				f.steady("acquire", 2, 200*time.Millisecond) // the other holder's and ours: guidance still pending
				r.signals <- syscall.SIGTERM
				sameEvents(t, lockDone(t, r, ExitSIGTERM), events.Waiting, events.Waiting)
			case c.event != "":
				r.expectNext(c.event, c.reason)
				sameEvents(t, lockDone(t, r, c.code), events.Waiting, c.event)
			default:
				sameEvents(t, lockDone(t, r, c.code), events.Waiting)
				require.Contains(t, lockDiag(r.hold), "octostore: Conflict: keepalive refused")
			}
			require.Equal(t, 1, f.requests("delete_session"))
		})
	}
}

// L2: `held` (HTTP 200) and `delayed` (HTTP 409) are told apart; guidance is
// floored at 100 ms; the acquisition deadline then ends the hold with 11.
func TestProtocolLockHeldAndDelayed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		setup  func(f *fake)
		reason string
		min    float64
	}{
		{"held", func(f *fake) { holdOther(f, "hd", 60, 0) }, ReasonHeld, 100},
		{"delayed", func(f *fake) {
			lease := holdOther(f, "hd", 60, 5)
			postAuth(f, "/locks/hd/release", map[string]any{"lease_id": lease})
		}, reasonDelayed, 100},
		{"held with zero guidance floors", func(f *fake) {
			holdOther(f, "hd", 60, 0)
			f.fault(map[string]any{"route": "acquire", "kind": "timing", "retry_after_ms": 0})
		}, ReasonHeld, 105},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			c.setup(f)
			r := startLockHold(t, f, "hd", 30*time.Second, func(h *lockHold) { h.AcquireTimeout = durPtr(2 * time.Second) })
			w := r.expectNext(events.Waiting, c.reason)
			require.GreaterOrEqual(t, w["retry_after_ms"].(float64), c.min)
			r.expectNext(events.Error, ReasonAcquireTimeout, events.Waiting)
			names := lockDone(t, r, ExitAcquireTimeout)
			require.Equal(t, events.Error, names[len(names)-1])
			for _, n := range names[:len(names)-1] {
				require.Equal(t, events.Waiting, n)
			}
			// 2 s at ≥ 95 ms per attempt: no storm even with zero guidance.
			require.LessOrEqual(t, f.requests("acquire"), 2000/95+3)
		})
	}
}

// docs/protocol.md "Easy to miss" item 7, L4 (lock half): zero or absurd server
// timings never cause a request storm. keepalive_interval_secs outside 1..=30
// ends the hold (70, session deleted, the field named); renew_after_ms 0 is
// floored at 100 ms, an absurd one capped at ttl/2.
func TestProtocolLockZeroTimings(t *testing.T) {
	t.Parallel()
	for _, secs := range []int64{0, 1_000_000_000_000} {
		t.Run("keepalive_interval_secs "+itoa(uint64(secs)), func(t *testing.T) {
			t.Parallel()
			f := startLockFake(t)
			f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": secs})
			r := startLockHold(t, f, "zero", 30*time.Second)
			sameEvents(t, lockDone(t, r, ExitSoftware))
			require.Contains(t, lockDiag(r.hold), "keepalive_interval_secs outside 1..=30")
			require.Equal(t, 1, f.requests("delete_session"))
			require.Zero(t, f.requests("acquire"))
			require.Zero(t, f.requests("keepalive"))
		})
	}
	t.Run("renew_after_ms absurd", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 1_000_000_000_000, "count": 1})
		clk := newManualClock()
		r := startLockHold(t, f, "absurd", 5*time.Second, lockWithClock(clk))
		r.expectNext(events.Acquired, "")
		clk.advance(2374 * time.Millisecond)
		f.steady("lock_renew", 0, 300*time.Millisecond)
		clk.advance(time.Millisecond) // ttl/2 less 5 % jitter
		r.expectNext(events.Renewed, "")
		require.Equal(t, 1, f.requests("lock_renew"))
		r.signals <- syscall.SIGINT
		r.expectNext(events.Released, ReasonSignal)
		lockDone(t, r, ExitSIGINT)
	})
	t.Run("renew_after_ms 0", func(t *testing.T) {
		t.Parallel()
		f := startLockFake(t)
		f.fault(map[string]any{"route": "acquire,lock_renew", "kind": "timing", "renew_after_ms": 0})
		r := startLockHold(t, f, "zero", 30*time.Second)
		r.expectNext(events.Acquired, "")
		start := time.Now()
		time.Sleep(time.Second) // time must really pass: this case measures the rate on the real clock
		n := f.requests("lock_renew")
		el := time.Since(start)
		require.GreaterOrEqual(t, n, 1)
		require.LessOrEqual(t, n, int(el/(95*time.Millisecond))+2, "%d renewals in %v", n, el)
		r.signals <- syscall.SIGTERM
		r.expectNext(events.Released, ReasonSignal, events.Renewed)
		lockDone(t, r, ExitSIGTERM)
	})
}

// docs/protocol.md "Easy to miss" item 8, L6: keepalives run while waiting, but
// a successful keepalive never brings the next acquire forward: the server's
// 2.5 s guidance holds, so with a 1.8 s acquisition deadline there is exactly
// one acquire.
func TestProtocolLockKeepaliveNeverAuthorizesEarlyAcquire(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	holdOther(f, "guided", 60, 0)
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "retry_after_ms": 2500})
	f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 1, "count": 1})
	r := startLockHold(t, f, "guided", 30*time.Second, func(h *lockHold) { h.AcquireTimeout = durPtr(1800 * time.Millisecond) })
	w := r.expectNext(events.Waiting, ReasonHeld)
	require.GreaterOrEqual(t, w["retry_after_ms"].(float64), 2500.0)
	r.expectNext(events.Error, ReasonAcquireTimeout)
	sameEvents(t, lockDone(t, r, ExitAcquireTimeout), events.Waiting, events.Error)
	require.Equal(t, 2, f.requests("acquire"), "the other holder's acquire and exactly one of ours")
	require.GreaterOrEqual(t, f.requests("keepalive"), 1)
}

// docs/protocol.md "Easy to miss" item 8, L11: a lock TTL of 3600 s never
// outlives the 24 s session bound. The acquired budget is 24 000 ms; when
// keepalives stall, the hold is uncertain
// session_confirmation_deadline_exceeded exactly at 24 s (manual clock), with
// the lease's own safety deadline (2880 s) far away.
func TestProtocolLockSessionBoundCapsLongTTL(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	clk := newManualClock()
	r := startLockHold(t, f, "long", 3600*time.Second, lockWithClock(clk), lockSlowRequests(t))
	acq := r.expectNext(events.Acquired, "")
	require.Equal(t, 24000.0, acq["authority_remaining_ms"])
	f.fault(map[string]any{"route": "keepalive", "kind": "stall_headers"})
	clk.advance(15 * time.Second) // keepalive_interval_secs 15
	f.waitRequests("keepalive", 1)
	clk.advance(8999 * time.Millisecond)
	f.steady("keepalive", 1, 300*time.Millisecond)
	require.Len(t, eventNames(r.out), 1)
	clk.advance(time.Millisecond)
	u := r.expectNext(events.Uncertain, reasonSessionConfirmationDeadline)
	require.Equal(t, acq["term"], u["term"])
	sameEvents(t, lockDone(t, r, ExitLost), events.Acquired, events.Uncertain)
	require.Zero(t, f.requests("lock_renew"))
	require.Equal(t, 1, f.requests("delete_session"))
}

// docs/protocol.md "Authority budget", "Easy to miss" item 3: a server may
// announce keepalive_interval_secs up to 30, but the session can only be
// vouched for 24 s. The hold must report the end of its authority at the 24 s
// session deadline, not sleep on until the 30 s keepalive.
func TestProtocolLockKeepaliveIntervalPastSessionBound(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 30, "count": 1})
	clk := newManualClock()
	r := startLockHold(t, f, "slow-ka", 3600*time.Second, lockWithClock(clk))
	r.expectNext(events.Acquired, "")
	clk.advance(23999 * time.Millisecond)
	f.steady("keepalive", 0, 300*time.Millisecond)
	require.Len(t, eventNames(r.out), 1)
	clk.advance(time.Millisecond)
	r.expectNext(events.Uncertain, reasonSessionConfirmationDeadline)
	sameEvents(t, lockDone(t, r, ExitLost), events.Acquired, events.Uncertain)
}

// L9: a retryable session-creation failure is waited out (the code is the
// reason), then the lock is acquired; SIGINT releases it (130).
func TestProtocolLockRetryableSessionCreation(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "error", "status": 503, "code": "upstream_unavailable", "count": 1})
	r := startLockHold(t, f, "sess-retry", 30*time.Second)
	r.expectNext(events.Waiting, "upstream_unavailable")
	r.expectNext(events.Acquired, "")
	r.signals <- syscall.SIGINT
	r.expectNext(events.Released, ReasonSignal)
	sameEvents(t, lockDone(t, r, ExitSIGINT), events.Waiting, events.Acquired, events.Released)
	require.Equal(t, 2, f.requests("create_session"))
}

// docs/protocol.md "Lock hold" step 9: retryable acquire failures become
// `waiting` with the code and the body guidance (later jitter only).
func TestProtocolLockRetryableAcquireWaiting(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "error", "status": 503, "count": 1})
	f.fault(map[string]any{"route": "acquire", "kind": "error", "status": 429, "code": "rate_limited", "retry_after_ms": 300, "count": 1, "skip": 1})
	r := startLockHold(t, f, "retry", 30*time.Second)
	w := r.expectNext(events.Waiting, CodeInternalError)
	require.Equal(t, 525.0, w["retry_after_ms"])
	w = r.expectNext(events.Waiting, "rate_limited")
	require.Equal(t, 315.0, w["retry_after_ms"])
	r.expectNext(events.Acquired, "")
	r.signals <- syscall.SIGTERM
	r.expectNext(events.Released, ReasonSignal)
	lockDone(t, r, ExitSIGTERM)
}

// docs/protocol.md "Easy to miss" item 1, L12 (lock half): a renewal answered
// 404 lease_not_current is loss: lost, 20, exactly one acquire — never a
// re-acquire.
func TestProtocolLockLostWithoutReacquisition(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 300, "count": 1})
	r := startLockHold(t, f, "expired", 30*time.Second)
	acq := r.expectNext(events.Acquired, "")
	f.post("/__control/expire", map[string]any{"lock": "expired"})
	lost := r.expectNext(events.Lost, "lease_not_current")
	require.Equal(t, acq["term"], lost["term"])
	sameEvents(t, lockDone(t, r, ExitLost), events.Acquired, events.Lost)
	require.Equal(t, 1, f.requests("acquire"))
	require.Equal(t, 1, f.requests("delete_session"))
	recs := f.records("lock_renew")
	require.Equal(t, 404, recs[len(recs)-1].Status)
}

// docs/protocol.md "Easy to miss" item 9: 1 MiB response cap for every lock
// request: oversized session and acquire answers are retryable
// response_too_large; an oversized renewal after authority is retried silently.
func TestProtocolLockOversizedResponses(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "oversized", "chunked": true, "count": 1, "no_effect": true})
	f.fault(map[string]any{"route": "acquire", "kind": "oversized", "count": 1, "no_effect": true})
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 100, "count": 1, "skip": 1})
	f.fault(map[string]any{"route": "lock_renew", "kind": "oversized", "count": 1})
	r := startLockHold(t, f, "big", 30*time.Second)
	r.expectNext(events.Waiting, codeResponseTooLarge)
	r.expectNext(events.Waiting, codeResponseTooLarge)
	r.expectNext(events.Acquired, "")
	r.expectNext(events.Renewed, "")
	r.signals <- syscall.SIGINT
	r.expectNext(events.Released, ReasonSignal)
	sameEvents(t, lockDone(t, r, ExitSIGINT), events.Waiting, events.Waiting, events.Acquired, events.Renewed, events.Released)
	require.Equal(t, 2, f.requests("lock_renew"))
}

// docs/protocol.md "Easy to miss" item 9, "Exit codes" row 70: a 3xx acquire
// answer is never followed (the bearer token must not travel to the Location)
// and is a non-retryable request_failed: session deleted, error event, exit 70.
func TestProtocolLockRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	trapHits := make(chan string, 100)
	trap := intercept(t, f, func(w http.ResponseWriter, r *http.Request) bool {
		trapHits <- r.Header.Get("Authorization")
		w.WriteHeader(200)
		return true
	})
	var once sync.Once
	front := intercept(t, f, func(w http.ResponseWriter, r *http.Request) bool {
		redirected := false
		if strings.HasSuffix(r.URL.Path, "/acquire") {
			once.Do(func() {
				http.Redirect(w, r, trap+r.URL.Path, http.StatusFound)
				redirected = true
			})
		}
		return redirected
	})
	r := startLockHold(t, f, "moved", 30*time.Second, func(h *lockHold) { h.Client = newClientFor(t, front, 10*time.Second) })
	r.expectNext(events.Error, codeRequestFailed)
	sameEvents(t, lockDone(t, r, ExitSoftware), events.Error)
	require.Equal(t, 1, f.requests("delete_session"))
	require.Empty(t, trapHits, "the redirect was followed")
}

// docs/protocol.md "Easy to miss" item 10: no secret ever reaches stdout or
// stderr — not the bearer token, even when the server reflects it into error
// details, request ids, holder ids and metadata, and not the session or lease
// ids.
func TestProtocolLockSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	holdOther(f, "secret", 2, 0)
	f.fault(map[string]any{"route": "create_session", "kind": "error", "status": 503, "count": 1})
	f.fault(map[string]any{"route": "create_session,acquire", "kind": "reflect_token", "count": 4})
	f.fault(map[string]any{"route": "acquire", "kind": "error", "status": 429, "code": "rate_limited", "retry_after_ms": 100, "count": 1})
	r := startLockHold(t, f, "secret", 30*time.Second)
	r.expectNext(events.Waiting, CodeInternalError)
	r.expectNext(events.Waiting, "rate_limited")
	r.expectNext(events.Acquired, "", events.Waiting)
	r.signals <- syscall.SIGINT
	r.expectNext(events.Released, ReasonSignal)
	lockDone(t, r, ExitSIGINT) // fails on the token in any line or diagnostic
	diag := lockDiag(r.hold)
	require.Contains(t, diag, "[REDACTED]", "the server did reflect the token; it must have been redacted")
	out := string(bytes.Join(r.out.lines, nil)) + diag
	ids := secretsOf(t, f)
	require.GreaterOrEqual(t, len(ids), 2)
	for _, id := range ids {
		require.NotContains(t, out, id)
	}
	require.NotContains(t, out, lockTestToken)
}

// docs/protocol.md "Easy to miss" item 11, L1 (in-process lock half): lock
// traffic to a loopback server ignores every proxy variable.
func TestProtocolLockLoopbackBypassesProxies(t *testing.T) {
	f := startLockFake(t)
	trapHits := make(chan string, 100)
	trap := intercept(t, f, func(w http.ResponseWriter, r *http.Request) bool {
		trapHits <- r.Method + " " + r.URL.String()
		w.WriteHeader(502)
		return true
	})
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, trap)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	r := startLockHold(t, f, "proxied", 30*time.Second, func(h *lockHold) {
		h.Client = newClientFor(t, strings.Replace(f.url, "127.0.0.1", "localhost", 1), 10*time.Second)
	})
	r.expectNext(events.Acquired, "")
	r.signals <- syscall.SIGTERM
	r.expectNext(events.Released, ReasonSignal)
	lockDone(t, r, ExitSIGTERM)
	require.Empty(t, trapHits)
}

// docs/protocol.md "Requests", "Easy to miss" item 13: the lock requests on the
// wire: bearer on every request, exact compact alphabetical bodies, the name
// percent-encoded, no body (and no content-type) on keepalive and DELETE, no
// Accept-Encoding anywhere.
func TestProtocolLockWireRequests(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 1, "count": 1})
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 100, "count": 1})
	name := "repo/octostore/issue-1842"
	r := startLockHold(t, f, name, 120*time.Second)
	r.expectNext(events.Acquired, "")
	f.waitRequests("keepalive", 1)
	f.waitRequests("lock_renew", 1)
	r.signals <- syscall.SIGINT
	r.expectNext(events.Released, ReasonSignal, events.Renewed)
	lockDone(t, r, ExitSIGINT)

	sess := f.records("create_session")[0]
	require.Equal(t, `{"ttl_seconds":30}`, sess.Body)
	acq := f.records("acquire")[0]
	var ab struct {
		SessionID string `json:"session_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(acq.Body), &ab))
	require.Equal(t, `{"ephemeral":true,"session_id":"`+ab.SessionID+`","ttl_seconds":120}`, acq.Body)
	require.Equal(t, "/locks/repo%2Foctostore%2Fissue-1842/acquire", acq.Path)
	ren := f.records("lock_renew")[0]
	var rb struct {
		LeaseID string `json:"lease_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(ren.Body), &rb))
	require.Equal(t, `{"lease_id":"`+rb.LeaseID+`","ttl_seconds":120}`, ren.Body)
	require.Equal(t, `{"lease_id":"`+rb.LeaseID+`"}`, f.records("release")[0].Body)
	ka := f.records("keepalive")[0]
	require.Equal(t, "/sessions/"+ab.SessionID+"/keepalive", ka.Path)
	del := f.records("delete_session")[0]
	require.Equal(t, http.MethodDelete, del.Method)
	require.Equal(t, "/sessions/"+ab.SessionID, del.Path)
	for _, rec := range f.records("") {
		h := http.Header(rec.Headers)
		require.Equal(t, "Bearer "+lockTestToken, h.Get("Authorization"), rec.Route)
		require.Equal(t, userAgent, h.Get("User-Agent"), rec.Route)
		require.Equal(t, "*/*", h.Get("Accept"), rec.Route)
		require.Empty(t, h.Values("Accept-Encoding"), rec.Route)
		if rec.Body == "" {
			require.Empty(t, h.Values("Content-Type"), rec.Route)
		} else {
			require.Equal(t, "application/json", h.Get("Content-Type"), rec.Route)
		}
	}
}

// L17: two holds with the same bearer token contend as distinct owners
// (each is its own session). The second waits; the first is interrupted and
// releases (130); the second then acquires a larger term and releases on
// TERM (143).
func TestProtocolLockSameTokenContend(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	a := startLockHold(t, f, "shared", 3*time.Second)
	acqA := a.expectNext(events.Acquired, "")
	b := startLockHold(t, f, "shared", 3*time.Second)
	b.expectNext(events.Waiting, ReasonHeld)
	a.signals <- syscall.SIGINT
	a.expectNext(events.Released, ReasonSignal, events.Renewed)
	lockDone(t, a, ExitSIGINT)
	acqB := b.expectNext(events.Acquired, "", events.Waiting)
	require.Greater(t, acqB["term"].(float64), acqA["term"].(float64))
	b.signals <- syscall.SIGTERM
	b.expectNext(events.Released, ReasonSignal, events.Renewed)
	lockDone(t, b, ExitSIGTERM)
}

// docs/protocol.md "Exit codes" row 70: an unsupported OS clock (no continuous
// clock) is exit 70 before any request.
func TestProtocolLockUnsupportedClock(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	r := startLockHold(t, f, "clockless", 30*time.Second, lockWithClock(brokenClock{}))
	sameEvents(t, lockDone(t, r, ExitSoftware))
	require.Contains(t, lockDiag(r.hold), "no continuous clock")
	require.Zero(t, f.requests("create_session"))
}
