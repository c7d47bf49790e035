package hold

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

const lockTestToken = "lock-hold-secret-token-9f3a"

// startLockFake is startFake with a distinctive bearer token, so the tests
// can check that it never leaks.
func startLockFake(t *testing.T) *fake {
	t.Helper()
	if authorityBin == "" {
		t.Fatal("testbin/authority is only built on linux and darwin")
	}
	cmd := exec.Command(authorityBin, "--listen", "127.0.0.1:0", "--token", lockTestToken)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading authority URL: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return &fake{t: t, url: strings.TrimSpace(line)}
}

// postAuth is an authenticated API call made by "another holder".
func postAuth(f *fake, path string, body any) {
	f.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, f.url+path, bytes.NewReader(b))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+lockTestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		f.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
	}
}

type lockRun2 struct {
	bgRun
	hold *lockHold
}

func startLockHold(t *testing.T, f *fake, name string, ttl time.Duration, opts ...func(*lockHold)) *lockRun2 {
	t.Helper()
	srv, err := ValidateServer(f.url, true, false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ClientOptions{Server: srv, CapabilityBearing: true, ConnectTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	h := &lockHold{Client: c, Clock: SystemClock{}, Jitter: FixedJitter(500), Name: name, TTL: ttl,
		Token: lockTestToken, ShutdownTimeout: 5 * time.Second, Diag: &bytes.Buffer{}}
	for _, o := range opts {
		o(h)
	}
	r := &lockRun2{bgRun: bgRun{t: t, out: newSink()}, hold: h}
	h.Out = r.out
	r.signals, r.done = runInBackground(t, h.Run)
	return r
}

// finish waits for the exit status and validates every line with the
// supervisor's validator; no line or diagnostic may carry the token.
func (r *lockRun2) finish(wantCode int) []string {
	r.t.Helper()
	code := r.exitCode()
	diag := r.hold.Diag.(*bytes.Buffer).String()
	if code != wantCode {
		r.t.Errorf("exit code %d, want %d; diag: %s", code, wantCode, diag)
	}
	if strings.Contains(diag, lockTestToken) {
		r.t.Errorf("diagnostic leaks the token: %s", diag)
	}
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	if len(r.out.buf) != 0 {
		r.t.Errorf("unterminated output %q", r.out.buf)
	}
	st := events.NewStream(events.Expect{Kind: events.Lock, Name: r.hold.Name})
	var names []string
	for i, line := range r.out.lines {
		// Keys, quoted: the reason session_identity_mismatch is not a leak.
		if bytes.Contains(line, []byte(lockTestToken)) || bytes.Contains(line, []byte(`"candidate_id"`)) ||
			bytes.Contains(line, []byte(`"lease_id"`)) || bytes.Contains(line, []byte(`"session_id"`)) {
			r.t.Errorf("line %d leaks: %s", i+1, line)
		}
		ev, err := st.Next(line)
		if err != nil {
			r.t.Errorf("line %d %s rejected by the supervisor: %v", i+1, line, err)
			continue
		}
		if ev.Sequence != uint64(i+1) {
			r.t.Errorf("line %d has sequence %d", i+1, ev.Sequence)
		}
		names = append(names, ev.Event)
	}
	return names
}

func TestLockHoldAcquireRenewRelease(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	name := "repo/octostore/issue-1"
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 200, "count": 1})
	r := startLockHold(t, f, name, 30*time.Second)
	acq := r.expectNext(events.Acquired, "")
	if rem := acq["authority_remaining_ms"].(float64); rem <= 20000 || rem > 24000 {
		t.Errorf("authority_remaining_ms %v, want about 24000", rem)
	}
	ren := r.expectNext(events.Renewed, "")
	if ren["term"] != acq["term"] {
		t.Errorf("renewed term %v, acquired term %v", ren["term"], acq["term"])
	}
	r.signals <- syscall.SIGTERM
	rel := r.expectNext(events.Released, ReasonSignal)
	if rel["term"] != acq["term"] {
		t.Errorf("released term %v", rel["term"])
	}
	sameEvents(t, r.finish(ExitSIGTERM), events.Acquired, events.Renewed, events.Released)
	for route, want := range map[string]int{"create_session": 1, "release": 1, "delete_session": 1} {
		if n := f.requests(route); n != want {
			t.Errorf("%d %s requests, want %d", n, route, want)
		}
	}
}

func TestLockHoldHeldThenAcquireTimeout(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	name := "team.build"
	postAuth(f, "/locks/"+name+"/acquire", map[string]any{"ttl_seconds": 60})
	r := startLockHold(t, f, name, 30*time.Second, func(h *lockHold) { h.AcquireTimeout = durPtr(800 * time.Millisecond) })
	w := r.expectNext(events.Waiting, ReasonHeld)
	if ms := w["retry_after_ms"].(float64); ms < 50000 {
		t.Errorf("retry_after_ms %v, want the ~60 s guidance", ms)
	}
	r.expectNext(events.Error, ReasonAcquireTimeout)
	sameEvents(t, r.finish(ExitAcquireTimeout), events.Waiting, events.Error)
	if n := f.requests("delete_session"); n != 1 {
		t.Errorf("%d session deletes, want 1", n)
	}
	if n := f.requests("acquire"); n != 2 { // the other holder's and ours
		t.Errorf("%d acquires, want 2 (guidance must be honoured)", n)
	}
}

func TestLockHoldStolen(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	name := "stolen"
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 300, "count": 1})
	r := startLockHold(t, f, name, 30*time.Second)
	acq := r.expectNext(events.Acquired, "")
	f.post("/__control/revoke", map[string]any{"lock": name})
	lost := r.expectNext(events.Lost, "lease_not_current", events.Renewed)
	if lost["term"] != acq["term"] {
		t.Errorf("lost %v after acquired %v", lost, acq)
	}
	names := r.finish(ExitLost)
	if names[0] != events.Acquired || names[len(names)-1] != events.Lost {
		t.Errorf("events %v", names)
	}
	if n := f.requests("delete_session"); n != 1 {
		t.Errorf("%d session deletes, want 1", n)
	}
}

func TestLockHoldLeaseChanged(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "timing", "renew_after_ms": 200, "count": 1})
	f.fault(map[string]any{"route": "lock_renew", "kind": "wrong_lease_id", "count": 1})
	r := startLockHold(t, f, "changed", 30*time.Second)
	r.expectNext(events.Acquired, "")
	r.expectNext(events.Lost, ReasonLeaseChanged)
	sameEvents(t, r.finish(ExitLost), events.Acquired, events.Lost)
}

func TestLockHoldKeepaliveProvesLoss(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 1, "count": 1})
	r := startLockHold(t, f, "ka", 30*time.Second)
	r.expectNext(events.Acquired, "")
	f.fault(map[string]any{"route": "keepalive", "kind": "error", "status": 410, "code": "session_expired"})
	r.expectNext(events.Lost, "session_expired", events.Renewed)
	r.finish(ExitLost)
}

func TestLockHoldSessionCreateFatal(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "error", "status": 403, "code": "forbidden"})
	r := startLockHold(t, f, "x", 30*time.Second)
	sameEvents(t, r.finish(ExitSoftware))
}

func TestLockHoldBadKeepaliveInterval(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "create_session", "kind": "timing", "keepalive_interval_secs": 31})
	r := startLockHold(t, f, "x", 30*time.Second)
	sameEvents(t, r.finish(ExitSoftware))
	if n := f.requests("delete_session"); n != 1 {
		t.Errorf("%d session deletes, want 1", n)
	}
}

func TestLockHoldAcquireFatal(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "acquire", "kind": "error", "status": 403, "code": "lock_limit_exceeded"})
	r := startLockHold(t, f, "x", 30*time.Second)
	r.expectNext(events.Error, "lock_limit_exceeded")
	sameEvents(t, r.finish(ExitUsage), events.Error)
	if n := f.requests("delete_session"); n != 1 {
		t.Errorf("%d session deletes, want 1", n)
	}
}

func TestDecodeAcquireResponse(t *testing.T) {
	for _, bad := range []string{`{}`, `{"status":"nope"}`, `{"status":"acquired","lease_id":"l"}`, `{"status":"held","retry_after_ms":1}`} {
		if _, err := decodeAcquireResponse([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	r, err := decodeAcquireResponse([]byte(`{"status":"delayed","available_at":"2026-01-01T00:00:00Z","lock_delay_seconds":5,"retry_after_ms":4321}`))
	if err != nil || r.Status != lockStatusDelayed || r.RetryAfterMS != 4321 {
		t.Errorf("%+v %v", r, err)
	}
	if !isJSONNull([]byte("null")) || isJSONNull([]byte("{}")) || isJSONNull([]byte("")) {
		t.Error("isJSONNull")
	}
}

func TestLockHoldReleaseUnconfirmed(t *testing.T) {
	t.Parallel()
	f := startLockFake(t)
	f.fault(map[string]any{"route": "release", "kind": "release_body", "count": 1})
	r := startLockHold(t, f, "rel", 30*time.Second, func(h *lockHold) { h.ShutdownTimeout = 10 * time.Second })
	r.expectNext(events.Acquired, "")
	start := time.Now()
	r.signals <- syscall.SIGINT
	m := r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
	if _, ok := m["expires_at"]; ok {
		t.Error("release_unconfirmed carries expires_at")
	}
	if el := time.Since(start); el > 2500*time.Millisecond {
		t.Errorf("shutdown took %v", el)
	}
	sameEvents(t, r.finish(ExitSIGINT), events.Acquired, events.Uncertain)
}
