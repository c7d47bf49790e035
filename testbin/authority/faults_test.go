package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func i64(v int64) *int64 { return &v }

func TestFaultStallHeaders(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindStallHeaders, Count: 1})
	cl := &http.Client{Timeout: 200 * time.Millisecond}
	_, err := cl.Post(f.srv.URL+"/elections/room-0001/campaign", "application/json", strings.NewReader(`{"candidate_id":"a"}`))
	require.Error(t, err)
	// The campaign took effect even though its answer never came.
	r := f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"status":"leader"`)
	require.Eventually(t, func() bool {
		recs := f.a.Requests("campaign")
		return len(recs) == 1 && recs[0].Status == 0 && recs[0].Faults[0] == KindStallHeaders
	}, 2*time.Second, 10*time.Millisecond)
	// Count 1: the next campaign answers normally.
	r, _ = f.campaign(t, "room-0001", "b")
	require.Contains(t, r.body, `"status":"follower"`)
}

func TestFaultStallBodyAfterBrace(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "election_status", Kind: KindStallBody})
	cl := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := cl.Get(f.srv.URL + "/elections/room-0001")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Greater(t, resp.ContentLength, int64(1))
	b, err := io.ReadAll(resp.Body)
	require.Error(t, err)
	require.Equal(t, "{", string(b))
}

func TestFaultDelayAndNoEffectDrop(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindDelay, DelayMs: 300, Count: 1})
	start := time.Now()
	r, token := f.campaign(t, "room-0001", "a")
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.NotEmpty(t, token, r.body)

	f.a.MustAddFault(Fault{Route: "election_renew", Kind: KindDrop, Count: 1, NoEffect: true})
	f.clk.Advance(time.Second)
	_, err := f.srv.Client().Post(f.srv.URL+"/elections/room-0001/renew", "application/json",
		strings.NewReader(`{"leader_token":"`+token+`","ttl_seconds":30}`))
	require.Error(t, err)
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"expires_at":"2026-08-02T12:00:30Z"`, "no_effect drop did not renew")

	f.a.MustAddFault(Fault{Route: "election_renew", Kind: KindDrop, Count: 1})
	_, err = f.srv.Client().Post(f.srv.URL+"/elections/room-0001/renew", "application/json",
		strings.NewReader(`{"leader_token":"`+token+`","ttl_seconds":30}`))
	require.Error(t, err)
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"expires_at":"2026-08-02T12:00:31Z"`, "default drop renewed, then lost the answer")
}

func TestFaultBodyFields(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindWrongCandidate, Count: 1})
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindWrongTerm, Term: new(uint64), Count: 1})
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindTiming, RenewAfterMs: i64(0), Count: 1})
	r, token := f.campaign(t, "room-0001", "agent-a")
	require.Equal(t, `{"status":"leader","election_id":"room-0001","leader":{"candidate_id":"intruder","term":0,"expires_at":"2026-08-02T12:00:30Z"},"leader_token":"`+token+`","renew_after_ms":0}`, r.body)

	f.a.MustAddFault(Fault{Route: "election_renew", Kind: KindWrongTerm, Count: 1})
	f.a.MustAddFault(Fault{Route: "election_renew", Kind: KindTiming, RenewAfterMs: i64(1 << 62), Count: 1})
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"`+token+`","ttl_seconds":30}`, "")
	require.Contains(t, r.body, `"term":2,`)
	require.Contains(t, r.body, `"renew_after_ms":4611686018427387904}`)

	f.a.MustAddFault(Fault{Route: "resign", Kind: KindResignMismatch})
	r = f.do(t, "POST", "/elections/room-0001/resign", `{"leader_token":"`+token+`"}`, "")
	require.Equal(t, `{"election_id":"room-0001","status":"vacant","previous_term":2}`, r.body)

	f.a.MustAddFault(Fault{Route: "create_session", Kind: KindTiming, KeepaliveSecs: i64(0)})
	r = f.do(t, "POST", "/sessions", `{"ttl_seconds":30}`, tok)
	require.Contains(t, r.body, `"keepalive_interval_secs":0}`)
	sid := field[string](t, r.body, "session_id")
	other := newUUID().String()
	f.a.MustAddFault(Fault{Route: "keepalive", Kind: KindWrongSession, SessionID: other})
	r = f.do(t, "POST", "/sessions/"+sid+"/keepalive", "", tok)
	require.Equal(t, `{"session_id":"`+other+`","expires_at":"2026-08-02T12:00:30Z"}`, r.body)

	f.a.MustAddFault(Fault{Route: "acquire", Kind: KindTiming, RenewAfterMs: i64(0)})
	r = f.acquire(t, "z", sid)
	require.Contains(t, r.body, `"renew_after_ms":0,`)

	f.a.MustAddFault(Fault{Route: "release", Kind: KindReleaseBody})
	r = f.do(t, "POST", "/locks/z/release", `{"lease_id":"`+field[string](t, r.body, "lease_id")+`"}`, tok)
	require.Equal(t, "{}", r.body)
}

func TestFaultSkipAndCount(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "health", Kind: KindError, Status: 500, Skip: 1, Count: 2})
	var got []int
	for i := 0; i < 5; i++ {
		got = append(got, f.do(t, "GET", "/health", "", "").status)
	}
	require.Equal(t, []int{200, 500, 500, 200, 200}, got)
	require.Empty(t, f.a.Faults())
}

func TestFaultErrorStorms(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "campaign,acquire", Kind: KindError, Status: 429, RetryAfterMs: i64(2000), Count: 2})
	r := f.do(t, "POST", "/elections/room-0001/campaign", `{"candidate_id":"a"}`, "")
	require.Equal(t, 429, r.status)
	require.Equal(t, "2", r.header.Get("Retry-After"))
	require.Equal(t, `{"code":"rate_limited","details":"Rate limit exceeded; retry in 2 seconds","error":"Rate limit exceeded","request_id":"`+r.header.Get("x-request-id")+`","retry_after_ms":2000}`, r.body)
	r = f.do(t, "POST", "/locks/q/acquire", `{}`, tok)
	require.Equal(t, 429, r.status)
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"status":"vacant"`, "an error fault has no effect")
	r, _ = f.campaign(t, "room-0001", "a")
	require.Contains(t, r.body, `"status":"leader"`)

	f.a.MustAddFault(Fault{Kind: KindError, Status: 503, RetryAfterMs: i64(0), Count: 1})
	r = f.do(t, "GET", "/health", "", "")
	require.Equal(t, 503, r.status)
	require.Equal(t, "", r.header.Get("Retry-After"))
	require.Equal(t, `{"code":"internal_error","details":"Internal server error","error":"Internal server error","request_id":"`+r.header.Get("x-request-id")+`","retry_after_ms":0}`, r.body)

	f.a.MustAddFault(Fault{Kind: KindError, Status: 409, Code: "capacity_exceeded", RetryAfterMs: i64(30000), Count: 1})
	r = f.do(t, "GET", "/health", "", "")
	require.Equal(t, "30", r.header.Get("Retry-After"))
	require.Equal(t, "capacity_exceeded", field[string](t, r.body, "code"))
}

func TestFaultOversized(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "health", Kind: KindOversized, Count: 1})
	f.a.MustAddFault(Fault{Route: "health", Kind: KindOversized, Chunked: true, SizeBytes: 2 << 20, Skip: 1, Count: 1})
	resp, err := f.srv.Client().Get(f.srv.URL + "/health")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, int64(1<<20+1), resp.ContentLength)
	require.Len(t, b, 1<<20+1)
	require.True(t, strings.HasPrefix(string(b), `{"db_size_bytes":4096`))
	resp, err = f.srv.Client().Get(f.srv.URL + "/health")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, int64(-1), resp.ContentLength)
	require.Len(t, b, 2<<20)
}

func TestFaultSSE(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "election_watch", Kind: KindSSE, SSERetryMs: i64(400), SSECloseAfter: 1})
	_, next := f.openSSE(t, "/elections/room-0001/watch", "")
	require.True(t, strings.HasPrefix(next(), "event: state\nretry:400\ndata: {"))
	f.a.MustAddFault(Fault{Route: "lock_watch", Kind: KindSSE, SSERetryMs: i64(400), SSECloseAfter: 1, SSEFrameBytes: 70000})
	resp, next2 := f.openSSE(t, "/locks/l/watch", tok)
	require.Len(t, next2(), len("data: \n\n")+70000)
	require.Equal(t, "retry:400\ndata: {\"event\":\"released\",\"lock_name\":\"l\",\"observed_at\":\"2026-08-02T12:00:00Z\"}\n\n", next2())
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Empty(t, rest, "stream closed after one frame")
}

func TestFaultReflectToken(t *testing.T) {
	f := newFake(t)
	f.do(t, "POST", "/locks/rt/acquire", `{}`, tok)
	f.a.MustAddFault(Fault{Route: "lock_status", Kind: KindReflectToken, Count: 1})
	r := f.do(t, "GET", "/locks/rt", "", tok)
	require.Equal(t, tok, field[string](t, r.body, "holder_id"))
	require.Equal(t, tok, field[string](t, r.body, "metadata"))
	f.a.MustAddFault(Fault{Route: "acquire", Kind: KindReflectToken, Count: 1})
	f.a.MustAddFault(Fault{Route: "acquire", Kind: KindError, Status: 500, Count: 1})
	r = f.do(t, "POST", "/locks/rt/acquire", `{}`, tok)
	require.Equal(t, `{"code":"internal_error","details":"Internal server error `+tok+`","error":"Internal server error","request_id":"`+tok+`"}`, r.body)
}

func TestRevokeAndExpireKnobs(t *testing.T) {
	f := newFake(t)
	_, token := f.campaign(t, "room-0001", "agent-a")
	require.Equal(t, uint64(2), f.a.RevokeLeader("room-0001", "agent-b"))
	r := f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"candidate_id":"agent-b","term":2,`)
	r = f.do(t, "POST", "/elections/room-0001/renew", `{"leader_token":"`+token+`"}`, "")
	require.Equal(t, 400, r.status)
	require.NoError(t, f.a.ExpireElection("room-0001"))
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"status":"vacant"`)
	require.ErrorIs(t, f.a.ExpireLock("none"), ErrNotHeld)

	r = f.do(t, "POST", "/locks/k/acquire", `{}`, tok)
	lease := field[string](t, r.body, "lease_id")
	f.a.StealLock("k")
	r = f.do(t, "POST", "/locks/k/renew", `{"lease_id":"`+lease+`"}`, tok)
	require.Equal(t, 400, r.status)
}

func TestControlHTTP(t *testing.T) {
	f := newFake(t)
	post := func(path, body string) reply {
		return f.do(t, "POST", path, body, "")
	}
	r := post("/__control/faults", `[{"route":"health","kind":"error","status":502,"count":1},{"kind":"bogus"}]`)
	require.Equal(t, 400, r.status, "unknown kinds are refused")
	f.a.ClearFaults()
	r = post("/__control/faults", `{"route":"health","kind":"error","status":502,"count":1}`)
	require.Equal(t, `{"ids":[2]}`, r.body)
	r = f.do(t, "GET", "/health", "", "")
	require.Equal(t, 502, r.status)
	require.Equal(t, "upstream_unavailable", field[string](t, r.body, "code"))

	f.campaign(t, "room-0001", "agent-a")
	r = post("/__control/revoke", `{"election_id":"room-0001","candidate_id":"agent-z"}`)
	require.Equal(t, `{"term":2}`, r.body)
	r = post("/__control/clock", `{"advance_ms":1500}`)
	require.Equal(t, `{"now":"2026-08-02T12:00:01.500Z"}`, r.body)
	r = post("/__control/expire", `{"election_id":"room-0001"}`)
	require.Equal(t, 204, r.status)
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"status":"vacant"`)
	r = post("/__control/elections", `{"enabled":false}`)
	require.Equal(t, 204, r.status)
	require.Equal(t, 403, f.do(t, "GET", "/elections/room-0001", "", "").status)
	require.Equal(t, 204, f.do(t, "DELETE", "/__control/requests", "", "").status)
	require.Equal(t, `[]`, f.do(t, "GET", "/__control/requests", "", "").body)
}

// no_effect works for oversized too (as documented on Fault.NoEffect): the
// padded answer arrives, but the request changed nothing. The hold tests rely
// on it to feed a client an oversized campaign answer that did not make it
// leader behind its back.
func TestFaultOversizedNoEffect(t *testing.T) {
	f := newFake(t)
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindOversized, Count: 1, NoEffect: true})
	r := f.do(t, "POST", "/elections/room-0001/campaign", `{"candidate_id":"a"}`, "")
	require.Equal(t, 200, r.status)
	require.Len(t, r.body, 1<<20+1)
	require.Equal(t, "{}", strings.TrimSpace(r.body))
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"status":"vacant"`, "a no_effect campaign made a leader")

	// Without no_effect the campaign takes effect and only the answer is bad.
	f.a.MustAddFault(Fault{Route: "campaign", Kind: KindOversized, Count: 1, Chunked: true})
	r = f.do(t, "POST", "/elections/room-0001/campaign", `{"candidate_id":"a"}`, "")
	require.Len(t, r.body, 1<<20+1)
	r = f.do(t, "GET", "/elections/room-0001", "", "")
	require.Contains(t, r.body, `"status":"leader"`)
}
