package hold

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Test support for the protocol, golden and signal tests: a clock that only
// moves when told to, a transport hook that makes a success arrive "late", an
// intercepting proxy, and an event-shape checker built from
// docs/protocol.md "Event envelope", "Events".

// manualClock is a hold Clock whose scheduler and continuous clocks move only
// when the test advances them, so deadline behaviour is decided by the test
// and not by how busy the machine is. The wall clock stays real: it only
// feeds observed_at, which no decision depends on.
//
// Its timers (timers) are real timers that also fire the moment the test
// moves the clock past them, so a hold waiting on this clock reacts to
// advance at once instead of at its next real poll.
type manualClock struct {
	mu      sync.Mutex
	sched   time.Time
	cont    int64
	waiters []chan struct{}
	timers  []*manualTimer
}

// manualTimer is one NewTimer of a manualClock.
type manualTimer struct {
	due  time.Time
	c    chan time.Time
	once sync.Once
	real *time.Timer
}

func (t *manualTimer) fire() {
	t.once.Do(func() { t.c <- time.Now() })
}

// NewTimer implements timers.
func (c *manualClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{due: c.sched.Add(d), c: make(chan time.Time, 1)}
	t.real = time.AfterFunc(d, t.fire)
	c.timers = append(c.timers, t)
	return t.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.timers = slices.DeleteFunc(c.timers, func(o *manualTimer) bool { return o == t })
		return t.real.Stop()
	}
}

// fireLocked fires the timers the scheduler clock has reached, or all of
// them after a suspend (a resumed machine's pollers wake up).
func (c *manualClock) fireLocked(all bool) {
	c.timers = slices.DeleteFunc(c.timers, func(t *manualTimer) bool {
		if all || !c.sched.Before(t.due) {
			t.real.Stop()
			t.fire()
			return true
		}
		return false
	})
}

func newManualClock() *manualClock {
	return &manualClock{sched: time.Now(), cont: 99_500_123}
}

func (c *manualClock) Scheduler() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sched
}

func (c *manualClock) ContinuousMillis() (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		close(w)
	}
	c.waiters = nil
	return c.cont, nil
}

func (c *manualClock) Wall() time.Time { return time.Now() }

// advance moves both clocks, as time passing normally does.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.sched = c.sched.Add(d)
	c.cont += d.Milliseconds()
	c.fireLocked(false)
	c.mu.Unlock()
}

// advanceQuietly moves both clocks without waking any timer: time passed
// while the hold was not looking, which it notices only at its next poll.
func (c *manualClock) advanceQuietly(d time.Duration) {
	c.mu.Lock()
	c.sched = c.sched.Add(d)
	c.cont += d.Milliseconds()
	c.mu.Unlock()
}

// suspend moves only the continuous clock: a machine suspend, during which
// CLOCK_MONOTONIC (Go's timers) stands still and CLOCK_BOOTTIME does not.
func (c *manualClock) suspend(d time.Duration) {
	c.mu.Lock()
	c.cont += d.Milliseconds()
	c.fireLocked(true)
	c.mu.Unlock()
}

// nextRead is closed by the next read of the continuous clock. Every
// deadline check reads it last (Deadline.Remaining), so after it fires the
// hold's ≤100 ms poll has just run and the next one is a full poll away.
func (c *manualClock) nextRead() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	c.waiters = append(c.waiters, ch)
	return ch
}

// hookTransport calls onResponse with each response before the client sees
// it.
type hookTransport struct {
	base       http.RoundTripper
	onResponse func(*http.Request, *http.Response)
}

func (h *hookTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(req)
	if err == nil && h.onResponse != nil {
		h.onResponse(req, resp)
	}
	return resp, err
}

// hookResponses installs fn on the hold's client; call it before the hold
// starts.
func hookResponses(c *Client, fn func(*http.Request, *http.Response)) {
	c.http.Transport = &hookTransport{base: c.http.Transport, onResponse: fn}
}

// arriveLate makes the first response whose path ends in suffix arrive after
// clk has moved by d: it waits for the hold's deadline poll, advances the
// clock, and only then hands the (already complete) response over. The hold
// receives the answer a whole poll interval before it next looks at the
// clock on its own, so it meets a success that completed after its deadline
// — what a suspend or a slow scheduler produces in production.
func arriveLate(t *testing.T, c *Client, clk *manualClock, suffix string, d time.Duration) {
	var once sync.Once
	hookResponses(c, func(req *http.Request, _ *http.Response) {
		if !strings.HasSuffix(req.URL.Path, suffix) {
			return
		}
		once.Do(func() {
			select {
			case <-clk.nextRead():
			case <-time.After(5 * time.Second):
				t.Errorf("the hold did not poll its clock while %s was in flight", suffix)
			}
			clk.advanceQuietly(d)
		})
	})
}

// withClock and friends are options for startHold / startLockHold.
func withClock(c Clock) holdOpt { return func(h *electionHold) { h.Clock = c } }

func lockWithClock(c Clock) func(*lockHold) { return func(h *lockHold) { h.Clock = c } }

// slowRequests gives the hold a 60 s request timeout: in tests where a
// stalled request must be cut off by a hold deadline (on a manual clock), the
// 10 s default could otherwise end the stall first and hide a missing bound.
func slowRequests(t *testing.T) holdOpt { return withRequestTimeout(t, time.Minute) }

// withRequestTimeout gives the hold a client whose request timeout is d.
func withRequestTimeout(t *testing.T, d time.Duration) holdOpt {
	return func(h *electionHold) { h.Client = newClientFor(t, h.Client.server.URL, d) }
}

func lockSlowRequests(t *testing.T) func(*lockHold) {
	return func(h *lockHold) { h.Client = newClientFor(t, h.Client.server.URL, time.Minute) }
}

// stallTimeout is the request timeout of the tests whose fake authority
// stalls a request until the client gives up: short, since each stall costs
// the test that long, yet long enough for every request that does not stall
// to finish on a loaded machine (300 ms did not, under Wine beside the etcd
// tests: the lock hold's third, healthy request timed out too).
const stallTimeout = 2 * time.Second

// newClientFor builds a capability-bearing client like the helpers do, with
// a chosen request timeout.
func newClientFor(t *testing.T, rawURL string, requestTimeout time.Duration) *Client {
	t.Helper()
	srv, err := ValidateServer(rawURL, true, false)
	require.NoError(t, err)
	c, err := NewClient(ClientOptions{Server: srv, CapabilityBearing: true, ConnectTimeout: 2 * time.Second, RequestTimeout: requestTimeout})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// startAuthority runs testbin/authority with token and returns it with a
// function that stops it early (kill, then wait: the same on every OS); the
// cleanup also stops it and fails the test if the process is not reaped.
func startAuthority(t *testing.T, token string) (*fake, func()) {
	t.Helper()
	require.NotEmpty(t, authorityBin, "testbin/authority was not built on this OS")
	cmd := exec.Command(authorityBin, "--listen", "127.0.0.1:0", "--token", token)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(func() {
		stop()
		if cmd.ProcessState == nil {
			t.Errorf("authority process %d was not reaped", cmd.Process.Pid)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return &fake{t: t, url: strings.TrimSpace(line)}, stop
}

// record is one entry of the authority's request log.
type record struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Route   string              `json:"route"`
	Status  int                 `json:"status"`
	Body    string              `json:"body"`
	Headers map[string][]string `json:"headers"`
}

func (f *fake) records(route string) []record {
	f.t.Helper()
	resp, err := http.Get(f.url + "/__control/requests?route=" + route)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var v []record
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// waitRequests waits (generously) until route has been requested n times.
func (f *fake) waitRequests(route string, n int) {
	f.t.Helper()
	proctest.WaitFor(f.t, 10*time.Second, fmt.Sprintf("%d %s requests", n, route), func() bool { return f.requests(route) >= n })
}

// steady asserts route's request count stays at want for a while: with a
// frozen clock nothing may be requested that the clock did not make due.
// Time must really pass here: it proves that nothing happens.
func (f *fake) steady(route string, want int, d time.Duration) {
	f.t.Helper()
	time.Sleep(d)
	require.Equal(f.t, want, f.requests(route), "%s requests", route)
}

func (f *fake) get(path, bearer string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	require.NoError(f.t, err)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// postAuthBody is postAuth returning the decoded answer (status must be
// 2xx).
func postAuthBody(f *fake, path string, body any) map[string]any {
	f.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, f.url+path, bytes.NewReader(b))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+lockTestToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	require.Less(f.t, resp.StatusCode, 300, "POST %s: %s", path, data)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

// intercept is a loopback reverse proxy in front of the authority that lets
// a test answer chosen requests itself (a redirect, say) — things the fake's
// fault kinds cannot express.
func intercept(t *testing.T, f *fake, handle func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	target, err := url.Parse(f.url)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if handle(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lineKeys returns the top-level keys of one JSON object line, in order.
func lineKeys(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, "%s", line)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

// envelopeOrder is the key order of docs/protocol.md "Event envelope".
var envelopeOrder = []string{"schema_version", "sequence", "event", "kind", "name", "server", "candidate_id", "term",
	"expires_at", "retry_after_ms", "reason_code", "authority_remaining_ms", "authority_observed_unix_ms",
	"authority_observed_continuous_ms", "observed_at"}

// autoSiTimestamp is chrono's AutoSi RFC 3339 form: no fraction, or exactly
// 3, 6 or 9 digits.
var autoSiTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z$`)

// expectedKeys is the docs/protocol.md "Events" field set of one event line.
func expectedKeys(kind events.Kind, event, reason string) []string {
	opt := map[string]bool{}
	switch event {
	case events.Waiting:
		opt["retry_after_ms"], opt["reason_code"] = true, true
	case events.Leader, events.Acquired, events.Renewed:
		opt["term"], opt["expires_at"] = true, true
		opt["authority_remaining_ms"], opt["authority_observed_unix_ms"], opt["authority_observed_continuous_ms"] = true, true, true
	case events.Released:
		opt["term"], opt["reason_code"] = true, true
	case events.Lost:
		opt["term"], opt["expires_at"], opt["reason_code"] = true, true, true
	case events.Uncertain:
		opt["reason_code"] = true
		switch reason {
		case ReasonReleaseUnconfirmed:
			opt["term"] = true
		case ReasonRenewalDeadlineExceeded:
			opt["term"], opt["expires_at"] = true, true
		}
	case events.Error:
		opt["reason_code"] = true
	}
	if kind == events.Election {
		opt["candidate_id"] = true
	}
	var keys []string
	for i, k := range envelopeOrder {
		if i < 6 || k == "observed_at" || opt[k] {
			keys = append(keys, k)
		}
	}
	return keys
}

// checkShape asserts one hold line has exactly the
// docs/protocol.md "Event envelope", "Events" keys for its event, in order,
// with AutoSi timestamps. heldUncertain says whether an uncertain
// session_confirmation_deadline_exceeded line is the held variant (with term
// and expires_at) rather than the pre-authority one.
func checkShape(t *testing.T, kind events.Kind, line []byte, heldUncertain bool) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(line, &m), "%s", line)
	event, _ := m["event"].(string)
	reason, _ := m["reason_code"].(string)
	want := expectedKeys(kind, event, reason)
	if event == events.Uncertain && heldUncertain && reason != ReasonReleaseUnconfirmed {
		want = expectedKeys(kind, event, ReasonRenewalDeadlineExceeded)
	}
	got := lineKeys(t, line)
	require.Equal(t, want, got, "key order/presence of %s", line)
	// And the same keys, in the same order, as one of the golden lines
	// (docs/protocol.md "Example lines") for this event (golden_test.go), so live
	// output is pinned to upstream's bytes.
	matched := false
	for _, g := range goldenCases {
		if g.kind == kind && g.event == event && slices.Equal(lineKeys(t, []byte(g.want)), got) {
			matched = true
			break
		}
	}
	require.True(t, matched, "no golden %s line has the keys of %s", event, line)
	for _, k := range []string{"observed_at", "expires_at"} {
		if v, ok := m[k]; ok {
			require.Regexp(t, autoSiTimestamp, v, "%s in %s", k, line)
		}
	}
	require.False(t, bytes.Contains(line, []byte(": ")) || bytes.Contains(line, []byte(", ")), "not compact: %s", line)
}

// checkAllShapes runs checkShape on every line of a finished run: lines after
// an authority start are the held variants.
func checkAllShapes(t *testing.T, kind events.Kind, s *lineSink) {
	t.Helper()
	s.mu.Lock()
	lines := append([][]byte(nil), s.lines...)
	s.mu.Unlock()
	held := false
	for _, l := range lines {
		checkShape(t, kind, l, held)
		if bytes.Contains(l, []byte(`"event":"leader"`)) || bytes.Contains(l, []byte(`"event":"acquired"`)) {
			held = true
		}
	}
}

// eventNames decodes the event names of a sink's lines so far.
func eventNames(s *lineSink) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines {
		var m struct {
			Event string `json:"event"`
		}
		_ = json.Unmarshal(l, &m)
		out = append(out, m.Event)
	}
	return out
}
