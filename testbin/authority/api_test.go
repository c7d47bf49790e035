package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

func TestFormatTimeAutoSi(t *testing.T) {
	require.Equal(t, "2026-08-02T12:00:00Z", events.FormatTimestamp(t0))
	require.Equal(t, "2026-08-02T12:00:00.500Z", events.FormatTimestamp(t0.Add(500*time.Millisecond)))
	require.Equal(t, "2026-08-02T12:00:00.000001Z", events.FormatTimestamp(t0.Add(time.Microsecond)))
	require.Equal(t, "2026-08-02T12:00:00.123456789Z", events.FormatTimestamp(t0.Add(123456789)))
	require.Equal(t, "2026-08-02T12:00:00.120Z", events.FormatTimestamp(t0.Add(120*time.Millisecond)))
	require.Equal(t, "2026-08-02T12:00:00.000000100Z", events.FormatTimestamp(t0.Add(100)))
	require.Equal(t, "2026-08-02T12:00:00Z", events.FormatTimestamp(t0.In(time.FixedZone("x", 3600))))
}

func TestHealthAndStatus(t *testing.T) {
	f := newFake(t)
	r := f.do(t, "GET", "/health", "", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, `{"db_size_bytes":4096,"status":"ok","storage":"wal"}`, r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	f.campaign(t, "room-0001", "agent-a")
	f.clk.Advance(61 * time.Second)
	r = f.do(t, "GET", "/status", "", "")
	require.Equal(t, `{"active_locks":0,"status":"ok","total_acquires":1,"total_releases":0,"total_users":2,"uptime_seconds":61}`, r.body)
}

func TestElectionHappyPath(t *testing.T) {
	f := newFake(t)
	r := f.do(t, "POST", "/elections", "", "")
	require.Equal(t, 201, r.status)
	id := field[string](t, r.body, "election_id")
	require.Len(t, id, 32)
	require.Equal(t, `{"election_id":"`+id+`","campaign_path":"/elections/`+id+`/campaign","status_path":"/elections/`+id+`","watch_path":"/elections/`+id+`/watch"}`, r.body)

	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Equal(t, `{"election_id":"room-0001","status":"vacant","retry_after_ms":0}`, r.body)

	r, token := f.campaign(t, "room-0001", "agent-a")
	require.Len(t, token, 43)
	require.Equal(t, `{"status":"leader","election_id":"room-0001","leader":{"candidate_id":"agent-a","term":1,"expires_at":"2026-08-02T12:00:30Z"},"leader_token":"`+token+`","renew_after_ms":15000}`, r.body)

	f.clk.Advance(250 * time.Millisecond)
	r, _ = f.campaign(t, "room-0001", "agent-a") // not idempotent: the leader itself is a follower
	require.Equal(t, `{"status":"follower","election_id":"room-0001","leader":{"candidate_id":"agent-a","term":1,"expires_at":"2026-08-02T12:00:30Z"},"retry_after_ms":29750}`, r.body)

	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Equal(t, `{"election_id":"room-0001","status":"leader","leader":{"candidate_id":"agent-a","term":1,"expires_at":"2026-08-02T12:00:30Z"},"retry_after_ms":29750}`, r.body)

	f.clk.Advance(1250*time.Millisecond + 1500*time.Microsecond)
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"`+token+`","ttl_seconds":10}`, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, `{"status":"leader","election_id":"room-0001","leader":{"candidate_id":"agent-a","term":1,"expires_at":"2026-08-02T12:00:11.501500Z"},"leader_token":"`+token+`","renew_after_ms":5000}`, r.body)

	r = f.do(t, "POST", "/elections/room-0001/resign", `{"leader_token":"`+token+`"}`, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, `{"election_id":"room-0001","status":"vacant","previous_term":1}`, r.body)
	r = f.do(t, "POST", "/elections/room-0001/resign", `{"leader_token":"`+token+`"}`, "")
	require.Equal(t, 404, r.status)
	require.Equal(t, errBody(r, "lease_not_current", "Lease is not current", "Lease is not current"), r.body)
}

func TestElectionErrors(t *testing.T) {
	f := newFake(t)
	_, tokA := f.campaign(t, "room-0001", "agent-a")

	r := f.do(t, "POST", "/elections/short/campaign", `{"candidate_id":"a"}`, "")
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_input", field[string](t, r.body, "code"))
	r = f.do(t, "POST", "/elections/room-0001/campaign", `{"candidate_id":"a","ttl_seconds":4}`, "")
	require.Equal(t, errBody(r, "invalid_ttl", "Invalid TTL", "Invalid TTL: Public election TTL must be between 5 and 300 seconds"), r.body)
	r = f.do(t, "POST", "/elections/room-0001/campaign", `{"ttl_seconds":30}`, "")
	require.Equal(t, 422, r.status)
	require.Equal(t, errBody(r, "invalid_input", "Invalid input", frameworkDetails), r.body)
	r = f.do(t, "POST", "/elections/room-0001/campaign", `{"candidate_id":`, "")
	require.Equal(t, 400, r.status)
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"nope"}`, "")
	require.Equal(t, errBody(r, "invalid_input", "Invalid input", "Invalid input: Invalid leader token"), r.body)

	// 415 without content-type.
	req := f.do(t, "POST", "/elections/room-0001/resign", "", "")
	require.Equal(t, 415, req.status)
	require.Equal(t, errBody(req, "invalid_input", "Invalid input", frameworkDetails), req.body)

	// Unknown route 404, wrong method 405.
	r = f.do(t, "GET", "/nope", "", "")
	require.Equal(t, 404, r.status)
	require.Equal(t, errBody(r, "not_found", "Resource not found", "Resource not found"), r.body)
	r = f.do(t, "GET", "/elections/room-0001/campaign", "", "")
	require.Equal(t, 405, r.status)

	// Someone else's lease: 400; after expiry: 404.
	f.a.RevokeLeader("room-0001", "agent-b")
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"`+tokA+`","ttl_seconds":30}`, "")
	require.Equal(t, 400, r.status)
	require.Equal(t, errBody(r, "lease_not_current", "Lease is not current", "Invalid lease ID"), r.body)
	f.clk.Advance(30 * time.Second)
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"`+tokA+`","ttl_seconds":30}`, "")
	require.Equal(t, 404, r.status)

	f.a.SetElectionsEnabled(false)
	r = f.do(t, "POST", "/elections", "", "")
	require.Equal(t, errBody(r, "forbidden", "Forbidden", "Forbidden: Public elections are disabled on this server"), r.body)
	require.Equal(t, 403, r.status)
}

func TestTermsShareOneCounter(t *testing.T) {
	f := newFake(t)
	r, tokA := f.campaign(t, "room-0001", "agent-a")
	require.Contains(t, r.body, `"term":1,`)
	sid := f.session(t, tok)
	r = f.acquire(t, "repo%2Fx", sid)
	require.Equal(t, uint64(2), field[uint64](t, r.body, "fencing_token"))
	r, _ = f.campaign(t, "room-0002", "agent-a")
	require.Contains(t, r.body, `"term":3,`)
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"`+tokA+`","ttl_seconds":30}`, "")
	require.Contains(t, r.body, `"term":1,`, "renew keeps the term")
	f.clk.Advance(31 * time.Second) // room-0001 expires (lock ttl 120 still held)
	r, _ = f.campaign(t, "room-0001", "agent-b")
	require.Contains(t, r.body, `"status":"leader"`)
	require.Contains(t, r.body, `"term":4,`, "a new leadership takes the next global value")
	require.Equal(t, uint64(5), f.a.RevokeLeader("room-0001", ""))
}

func TestLockAndSessionHappyPath(t *testing.T) {
	f := newFake(t)
	r := f.do(t, "POST", "/sessions", `{"ttl_seconds":30}`, tok)
	sid := field[string](t, r.body, "session_id")
	require.Equal(t, `{"session_id":"`+sid+`","expires_at":"2026-08-02T12:00:30Z","keepalive_interval_secs":15}`, r.body)

	r = f.do(t, "GET", "/locks/repo%2Fx", "", tok)
	require.Equal(t, `{"name":"repo/x","status":"free","holder_id":null,"fencing_token":1,"expires_at":null,"metadata":null}`, r.body)

	r = f.acquire(t, "repo%2Fx", sid)
	require.Equal(t, 200, r.status)
	lease := field[string](t, r.body, "lease_id")
	require.Equal(t, `{"status":"acquired","lease_id":"`+lease+`","fencing_token":1,"expires_at":"2026-08-02T12:02:00Z","renew_after_ms":60000,"metadata":null}`, r.body)

	// Same bearer, other session: a distinct owner, so "held" as 200.
	sid2 := f.session(t, tok)
	f.clk.Advance(20 * time.Second)
	r = f.acquire(t, "repo%2Fx", sid2)
	require.Equal(t, 200, r.status)
	holder := field[string](t, r.body, "holder_id")
	require.NotEqual(t, sid, holder)
	require.Equal(t, byte('8'), holder[14])
	require.Equal(t, `{"status":"held","holder_id":"`+holder+`","expires_at":"2026-08-02T12:02:00Z","retry_after_ms":100000,"metadata":null}`, r.body)

	// Same session re-acquires: same lease and token, expiry = max.
	r = f.acquire(t, "repo%2Fx", sid)
	require.Equal(t, `{"status":"acquired","lease_id":"`+lease+`","fencing_token":1,"expires_at":"2026-08-02T12:02:20Z","renew_after_ms":60000,"metadata":null}`, r.body)

	r = f.do(t, "POST", "/sessions/"+sid+"/keepalive", "", tok)
	require.Equal(t, `{"session_id":"`+sid+`","expires_at":"2026-08-02T12:00:50Z"}`, r.body)

	f.clk.Advance(3 * time.Millisecond)
	r = f.do(t, "POST", "/locks/repo%2Fx/renew", `{"lease_id":"`+lease+`","ttl_seconds":7}`, tok)
	require.Equal(t, `{"lease_id":"`+lease+`","expires_at":"2026-08-02T12:00:27.003Z","renew_after_ms":3500}`, r.body)

	r = f.do(t, "GET", "/locks/repo%2Fx", "", tok)
	require.Equal(t, `{"name":"repo/x","status":"held","holder_id":"`+holder+`","fencing_token":1,"expires_at":"2026-08-02T12:00:27.003Z","metadata":null}`, r.body)

	r = f.do(t, "GET", "/sessions/"+sid, "", tok)
	require.Equal(t, `{"session_id":"`+sid+`","user_id":"`+pseudonym("user", tok)+`","expires_at":"2026-08-02T12:00:50Z","lock_count":1,"active":true}`, r.body)

	r = f.do(t, "POST", "/locks/repo%2Fx/release", `{"lease_id":"`+lease+`"}`, tok)
	require.Equal(t, 200, r.status)
	require.Equal(t, "null", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))

	r = f.do(t, "GET", "/locks/repo%2Fx", "", tok)
	require.Equal(t, `{"name":"repo/x","status":"free","holder_id":null,"fencing_token":1,"expires_at":null,"metadata":null}`, r.body)
	r = f.do(t, "GET", "/locks/never", "", tok)
	require.Contains(t, r.body, `"fencing_token":2,`)

	r = f.do(t, "DELETE", "/sessions/"+sid, "", tok)
	require.Equal(t, 204, r.status)
	require.Equal(t, "", r.body)
	r = f.do(t, "DELETE", "/sessions/"+sid, "", tok)
	require.Equal(t, 404, r.status)
	require.Equal(t, errBody(r, "not_found", "Session not found", "Session not found"), r.body)
}

func TestLockAuthAndValidation(t *testing.T) {
	f := newFake(t)
	r := f.do(t, "GET", "/locks/x", "", "")
	require.Equal(t, 401, r.status)
	require.Equal(t, errBody(r, "authentication_required", "Authorization header required", "Bearer token required"), r.body)
	r = f.do(t, "GET", "/locks/x", "", "wrong")
	require.Equal(t, errBody(r, "authentication_failed", "Authentication failed", "Authentication failed"), r.body)
	// JSON extraction precedes auth.
	r = f.do(t, "POST", "/locks/x/acquire", `{"ttl_seconds":`, "wrong")
	require.Equal(t, 400, r.status)
	r = f.do(t, "POST", "/sessions", `{}`, "")
	require.Equal(t, 401, r.status)
	r = f.do(t, "POST", "/locks/a..b%2F..%2Fc/acquire", `{}`, tok)
	require.Equal(t, "invalid_lock_name", field[string](t, r.body, "code"))
	r = f.do(t, "POST", "/locks/x/acquire", `{"ttl_seconds":0}`, tok)
	require.Equal(t, errBody(r, "invalid_ttl", "Invalid TTL", "Invalid TTL: TTL must be between 1 and 3600 seconds"), r.body)
	r = f.do(t, "POST", "/locks/x/acquire", `{"ephemeral":true}`, tok)
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_input", field[string](t, r.body, "code"))
	r = f.do(t, "GET", "/locks/__election%2Froom-0001", "", tok)
	require.Equal(t, 403, r.status)
	r = f.do(t, "POST", "/sessions/not-a-uuid/keepalive", "", tok)
	require.Equal(t, 400, r.status)
	sid := f.session(t, tok)
	r = f.do(t, "POST", "/sessions/"+sid+"/keepalive", "", "tok-B") // foreign
	require.Equal(t, 404, r.status)
}

func TestLockLeaseNotCurrentAndExpiry(t *testing.T) {
	f := newFake(t)
	sid := f.session(t, tok)
	r := f.do(t, "POST", "/locks/x/acquire", `{"ttl_seconds":10}`, tok) // user-held
	lease := field[string](t, r.body, "lease_id")
	r = f.do(t, "POST", "/locks/x/renew", `{"lease_id":"`+newUUID().String()+`"}`, tok)
	require.Equal(t, 400, r.status)
	require.Equal(t, errBody(r, "lease_not_current", "Lease is not current", "Invalid lease ID"), r.body)
	f.clk.Advance(10 * time.Second)
	r = f.do(t, "POST", "/locks/x/renew", `{"lease_id":"`+lease+`"}`, tok)
	require.Equal(t, 404, r.status)
	require.Equal(t, errBody(r, "lease_not_current", "Lease is not current", "Lease is not current"), r.body)
	r = f.do(t, "POST", "/locks/x/release", `{"lease_id":"`+lease+`"}`, tok)
	require.Equal(t, 404, r.status)

	// Ephemeral lock dies with its session; keepalive then 410.
	r = f.acquire(t, "y", sid)
	require.Contains(t, r.body, `"status":"acquired"`)
	f.clk.Advance(30 * time.Second)
	r = f.do(t, "POST", "/sessions/"+sid+"/keepalive", "", tok)
	require.Equal(t, 410, r.status)
	require.Equal(t, errBody(r, "session_expired", "Session expired", "Session expired"), r.body)
	r = f.do(t, "GET", "/locks/y", "", tok)
	require.Contains(t, r.body, `"status":"free"`)
	r = f.acquire(t, "y", sid)
	require.Equal(t, 410, r.status)
}

func TestLockDelayedIs409(t *testing.T) {
	f := newFake(t)
	r := f.do(t, "POST", "/locks/d/acquire", `{"lock_delay_seconds":5,"ttl_seconds":60}`, tok)
	lease := field[string](t, r.body, "lease_id")
	f.clk.Advance(time.Second)
	require.Equal(t, "null", f.do(t, "POST", "/locks/d/release", `{"lease_id":"`+lease+`"}`, tok).body)
	f.clk.Advance(1500 * time.Millisecond)
	r = f.do(t, "POST", "/locks/d/acquire", `{}`, "tok-B")
	require.Equal(t, 409, r.status)
	require.Equal(t, `{"status":"delayed","available_at":"2026-08-02T12:00:06Z","lock_delay_seconds":5,"retry_after_ms":3500}`, r.body)
	f.clk.Advance(3500 * time.Millisecond)
	r = f.do(t, "POST", "/locks/d/acquire", `{}`, "tok-B")
	require.Equal(t, 200, r.status)
	require.Contains(t, r.body, `"fencing_token":2,`)
}

func TestElectionWatchFrames(t *testing.T) {
	f := newFake(t)
	resp, next := f.openSSE(t, "/elections/room-0001/watch", "")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	require.Regexp(t, reqIDRe, resp.Header.Get("x-request-id"))
	require.Equal(t, "event: state\nretry:1000\ndata: {\"schema_version\":1,\"election_id\":\"room-0001\",\"status\":\"vacant\",\"leader\":null,\"retry_after_ms\":0,\"observed_at\":\"2026-08-02T12:00:00Z\"}\n\n", next())
	f.clk.Advance(10 * time.Millisecond)
	f.campaign(t, "room-0001", "agent-a")
	require.Equal(t, "event: state\nretry:1000\ndata: {\"schema_version\":1,\"election_id\":\"room-0001\",\"status\":\"leader\",\"leader\":{\"candidate_id\":\"agent-a\",\"term\":1,\"expires_at\":\"2026-08-02T12:00:30.010Z\"},\"retry_after_ms\":30000,\"observed_at\":\"2026-08-02T12:00:00.010Z\"}\n\n", next())
	require.Equal(t, ": keepalive\n\n", next())
	f.a.Advance(31 * time.Second) // expiry cleanup → vacant frame
	fr := next()
	for fr == ": keepalive\n\n" {
		fr = next()
	}
	require.Contains(t, fr, `"status":"vacant","leader":null`)
}

func TestLockWatchFrames(t *testing.T) {
	f := newFake(t)
	r := f.do(t, "GET", "/locks/w/watch", "", "")
	require.Equal(t, 401, r.status)
	resp, next := f.openSSE(t, "/locks/w/watch", tok)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "data: {\"event\":\"released\",\"lock_name\":\"w\",\"observed_at\":\"2026-08-02T12:00:00Z\"}\n\n", next())
	r = f.do(t, "POST", "/locks/w/acquire", `{"ttl_seconds":10}`, tok)
	require.Equal(t, "data: {\"event\":\"acquired\",\"lock_name\":\"w\",\"fencing_token\":1,\"expires_at\":\"2026-08-02T12:00:10Z\",\"observed_at\":\"2026-08-02T12:00:00Z\"}\n\n", next())
	lease := field[string](t, r.body, "lease_id")
	f.do(t, "POST", "/locks/w/renew", `{"lease_id":"`+lease+`","ttl_seconds":20}`, tok)
	require.Equal(t, "data: {\"event\":\"renewed\",\"lock_name\":\"w\",\"fencing_token\":1,\"expires_at\":\"2026-08-02T12:00:20Z\",\"observed_at\":\"2026-08-02T12:00:00Z\"}\n\n", next())
	require.Equal(t, ":\n\n", next())
	require.NoError(t, f.a.ExpireLock("w"))
	fr := next()
	for fr == ":\n\n" {
		fr = next()
	}
	require.Equal(t, "data: {\"event\":\"expired\",\"lock_name\":\"w\",\"observed_at\":\"2026-08-02T12:00:00Z\"}\n\n", fr)
}

func TestRequestLog(t *testing.T) {
	f := newFake(t)
	f.campaign(t, "room-0001", "agent-a")
	f.do(t, "GET", "/elections/room-0001", "", "")
	recs := f.a.Requests("campaign")
	require.Len(t, recs, 1)
	require.Equal(t, "POST", recs[0].Method)
	require.Equal(t, "/elections/room-0001/campaign", recs[0].Path)
	require.Equal(t, 200, recs[0].Status)
	require.Equal(t, `{"candidate_id":"agent-a","ttl_seconds":30}`, recs[0].Body)
	require.Equal(t, 2, f.a.CountRequests(""))
	// Over HTTP too.
	r := f.do(t, "GET", "/__control/requests?route=election_status", "", "")
	require.Equal(t, 200, r.status)
	require.Contains(t, r.body, `"route":"election_status","status":200`)
	require.Equal(t, 2, f.a.CountRequests(""), "control requests are not logged")
}
