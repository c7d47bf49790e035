package hold

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// feedAll feeds chunks in order and returns every frame and the first error.
func feedAll(chunks ...string) ([]string, int, error) {
	var s sseFrames
	var out []string
	for _, c := range chunks {
		frames, err := s.Feed([]byte(c))
		for _, f := range frames {
			out = append(out, string(f))
		}
		if err != nil {
			return out, s.Pending(), err
		}
	}
	return out, s.Pending(), nil
}

func TestSSEFramesSplit(t *testing.T) {
	for _, c := range []struct {
		name    string
		chunks  []string
		frames  []string
		pending int
	}{
		{"election frame", []string{"event: state\nretry:1000\ndata: {}\n\n"}, []string{"event: state\nretry:1000\ndata: {}\n\n"}, 0},
		{"several in one chunk, keepalives", []string{"data: a\n\n: keepalive\n\n:\n\ndata: b\n\nda"},
			[]string{"data: a\n\n", ": keepalive\n\n", ":\n\n", "data: b\n\n"}, 2},
		{"terminator split across chunks", []string{"data: a\n", "\ndata: b\r\n\r", "\n"}, []string{"data: a\n\n", "data: b\r\n\r\n"}, 0},
		{"CRLF frames", []string{"data: a\r\n\r\ndata: b\r\n\r\n"}, []string{"data: a\r\n\r\n", "data: b\r\n\r\n"}, 0},
		{"LF inside CRLF frame ends it", []string{"data: a\r\n\n"}, []string{"data: a\r\n\n"}, 0},
		{"no terminator yet", []string{"data: a\r\n", "data: b\n"}, nil, 17},
	} {
		t.Run(c.name, func(t *testing.T) {
			frames, pending, err := feedAll(c.chunks...)
			require.NoError(t, err)
			require.Equal(t, c.frames, frames)
			require.Equal(t, c.pending, pending)
		})
	}
	// Byte by byte gives the same frames as one chunk.
	stream := "event: state\nretry:1000\ndata: {\"x\":1}\n\n: keepalive\n\ndata: y\r\n\r\n"
	var bytewise []string
	for i := range stream {
		bytewise = append(bytewise, stream[i:i+1])
	}
	frames, _, err := feedAll(bytewise...)
	require.NoError(t, err)
	whole, _, _ := feedAll(stream)
	require.Equal(t, whole, frames)
	require.Len(t, frames, 3)
}

// The 64 KiB cap counts the whole frame, terminator included, and the pending
// unterminated data; it is checked before buffering.
func TestSSEFramesCap(t *testing.T) {
	data := func(n int) string { return "data: " + strings.Repeat("x", n-8) + "\n\n" } // a frame of n bytes

	frames, _, err := feedAll(data(maxSSEFrameBytes))
	require.NoError(t, err, "a frame of exactly 65536 bytes fits")
	require.Len(t, frames, 1)

	_, _, err = feedAll(data(maxSSEFrameBytes + 1))
	require.ErrorIs(t, err, errSSEFrameTooLarge)
	require.EqualError(t, err, "watch SSE frame exceeded 65536 bytes")

	// Frames completed earlier in the same chunk are still returned.
	frames, _, err = feedAll("data: a\n\n" + data(maxSSEFrameBytes+1))
	require.ErrorIs(t, err, errSSEFrameTooLarge)
	require.Equal(t, []string{"data: a\n\n"}, frames)

	// Unterminated: 65536 pending bytes are allowed, one more is not, even
	// when the next byte would have ended the frame.
	big := strings.Repeat("y", maxSSEFrameBytes)
	_, pending, err := feedAll(big[:40000], big[40000:])
	require.NoError(t, err)
	require.Equal(t, maxSSEFrameBytes, pending)
	_, _, err = feedAll(big, "z")
	require.ErrorIs(t, err, errSSEFrameTooLarge)
	_, _, err = feedAll(big[:maxSSEFrameBytes-1], "\n\n")
	require.ErrorIs(t, err, errSSEFrameTooLarge)
	frames, _, err = feedAll(big[:maxSSEFrameBytes-2], "\n\n")
	require.NoError(t, err)
	require.Len(t, frames, 1)
}

func TestSSERetryAndData(t *testing.T) {
	for frame, want := range map[string]int64{
		"event: state\nretry:1000\ndata: {}\n\n": 1000,
		"retry: 400 \r\ndata: x\r\n\r\n":         400,
		"retry:+5\n\n":                           5,
		"retry:abc\nretry:-1\nretry:7\n\n":       7, // first line that parses wins
		"retry:1.5\n\n":                          -1,
		"retry :5\n\n":                           -1,
		"data: retry:5\n\n":                      -1,
		"retry:18446744073709551616\n\n":         -1,
	} {
		got, ok := sseRetryMS([]byte(frame))
		if want < 0 {
			require.False(t, ok, "%q", frame)
			continue
		}
		require.True(t, ok, "%q", frame)
		require.Equal(t, uint64(want), got, "%q", frame)
	}
	require.True(t, sseHasData([]byte("event: state\nretry:1000\ndata: {}\n\n")))
	require.True(t, sseHasData([]byte("data:\n\n")))
	require.False(t, sseHasData([]byte(": keepalive\n\n")))
	require.False(t, sseHasData([]byte(" data: x\n\n")))
	require.False(t, sseHasData([]byte("event: data\n\n")))
}

// Stream guidance is honoured exactly like server retry_after_ms (clamped,
// 100 ms floor, later jitter only); without it, local backoff by attempt.
func TestReconnectDelay(t *testing.T) {
	g := func(v uint64) *uint64 { return &v }
	require.Equal(t, 1000*time.Millisecond, reconnectDelay(g(1000), 7, 0))
	require.Equal(t, 1100*time.Millisecond, reconnectDelay(g(1000), 7, 1000))
	require.Equal(t, 100*time.Millisecond, reconnectDelay(g(0), 0, 0), "retry:0 must not cause a request storm")
	require.Equal(t, 300*time.Second, reconnectDelay(g(1<<62), 0, 0))
	require.Equal(t, 500*time.Millisecond, reconnectDelay(nil, 0, 0))
	require.Equal(t, 16*time.Second, reconnectDelay(nil, 5, 0))
	require.Equal(t, 16*time.Second, reconnectDelay(nil, 50, 0))
}

// --- watch loop against testbin/authority ---

// watchDiag is a stderr buffer the test may read while the watch writes.
type watchDiag struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (d *watchDiag) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.b.Write(p)
}

func (d *watchDiag) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.b.String()
}

// watchSink collects stdout lines with the time each was written, so gaps
// between snapshots are measured where they happen, not when the test
// goroutine gets round to reading them.
type watchSink struct {
	mu    sync.Mutex
	buf   []byte
	lines []stampedLine
	ch    chan stampedLine
}

type stampedLine struct {
	text string
	at   time.Time
}

func (s *watchSink) Write(p []byte) (int, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l := stampedLine{string(s.buf[:i]), now}
		s.buf = s.buf[i+1:]
		s.lines = append(s.lines, l)
		s.ch <- l
	}
}

func (s *watchSink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines {
		out = append(out, l.text)
	}
	return out
}

type watchRunT struct {
	t       *testing.T
	w       *watch
	out     *watchSink
	diag    *watchDiag
	signals chan os.Signal
	done    chan int
}

func startWatch(t *testing.T, f *fake, kind Kind, name, token string, requestTimeout time.Duration, json bool) *watchRunT {
	t.Helper()
	srv, err := ValidateServer(f.url, kind == KindLock, false)
	require.NoError(t, err)
	c, err := NewClient(ClientOptions{Server: srv, CapabilityBearing: kind == KindLock, ConnectTimeout: 2 * time.Second, RequestTimeout: requestTimeout})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	r := &watchRunT{t: t, out: &watchSink{ch: make(chan stampedLine, 1000)}, diag: &watchDiag{}}
	r.w = &watch{Client: c, Kind: kind, Name: name, Token: token, JSON: json, Jitter: FixedJitter(0), Out: r.out, Diag: r.diag}
	r.signals, r.done = runInBackground(t, r.w.Run)
	return r
}

// next waits for the next stdout line.
func (r *watchRunT) next() stampedLine {
	r.t.Helper()
	select {
	case l := <-r.out.ch:
		return l
	case <-time.After(20 * time.Second):
		r.t.Fatalf("no snapshot within 20 s; stderr: %s", r.diag.String())
		return stampedLine{}
	}
}

func (r *watchRunT) line() string { r.t.Helper(); return r.next().text }

// exit waits for Run to return on its own.
func (r *watchRunT) exit() int {
	r.t.Helper()
	select {
	case code := <-r.done:
		r.done <- code // for runInBackground's cleanup
		return code
	case <-time.After(20 * time.Second):
		r.t.Fatalf("watch did not exit; stderr: %s", r.diag.String())
		return -1
	}
}

// stop sends sig and returns the exit status.
func (r *watchRunT) stop(sig os.Signal) int {
	r.t.Helper()
	r.signals <- sig
	return r.exit()
}

// matchLine compares a line with a template in which <TS> stands for an
// AutoSi timestamp and <N> for an unsigned integer.
func matchLine(t *testing.T, template, line string) {
	t.Helper()
	p := regexp.QuoteMeta(template)
	p = strings.ReplaceAll(p, "<TS>", `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z`)
	p = strings.ReplaceAll(p, "<N>", `(0|[1-9]\d*)`)
	require.Regexp(t, "^"+p+"$", line)
}

// watchRoutes is the authority's request log as route names, in order.
func watchRoutes(f *fake) []string {
	f.t.Helper()
	resp, err := http.Get(f.url + "/__control/requests")
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var recs []struct {
		Route string `json:"route"`
	}
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&recs))
	var out []string
	for _, r := range recs {
		out = append(out, r.Route)
	}
	return out
}

// A fresh connection prints two snapshots (the status read, then the
// stream's first frame); each later change reconciles and prints again.
// Signals end the watch with 130/143.
func TestWatchElectionSnapshots(t *testing.T) {
	f := startFake(t)
	id := f.createElection()
	r := startWatch(t, f, KindElection, id, "", 10*time.Second, true)
	vacant := `{"schema_version":1,"sequence":<SEQ>,"event":"snapshot","kind":"election","name":"` + id + `","server":"` + f.url +
		`","snapshot":{"election_id":"` + id + `","retry_after_ms":0,"status":"vacant"},"observed_at":"<TS>"}`
	matchLine(t, strings.Replace(vacant, "<SEQ>", "1", 1), r.line())
	matchLine(t, strings.Replace(vacant, "<SEQ>", "2", 1), r.line())

	f.post("/elections/"+id+"/campaign", map[string]any{"candidate_id": "agent-a", "ttl_seconds": 30})
	matchLine(t, `{"schema_version":1,"sequence":3,"event":"snapshot","kind":"election","name":"`+id+`","server":"`+f.url+
		`","snapshot":{"election_id":"`+id+`","leader":{"candidate_id":"agent-a","expires_at":"<TS>","term":<N>},"retry_after_ms":<N>,"status":"leader"},"observed_at":"<TS>"}`,
		r.line())
	require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
	require.Empty(t, r.diag.String())
	require.Equal(t, []string{"create_election", "election_status", "election_watch", "election_status", "campaign", "election_status"},
		watchRoutes(f)[:6], "status, watch, then one reconcile per data frame")

	r = startWatch(t, f, KindElection, id, "", 10*time.Second, false)
	require.Equal(t, "election "+id+" · leader · authority "+f.url, r.line())
	require.Equal(t, "election "+id+" · leader · authority "+f.url, r.line())
	require.Equal(t, ExitSIGTERM, r.stop(syscall.SIGTERM))
}

// Every reconnect reads status first, after waiting the stream's retry:
// guidance (the fake's election frames carry retry:1000).
func TestWatchReconnectReadsStatusFirst(t *testing.T) {
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "election_watch", "kind": "sse", "sse_close_after": 1, "count": 1})
	r := startWatch(t, f, KindElection, id, "", 10*time.Second, true)
	r.line()
	closed := r.next() // the first frame's reconcile; the stream then ends
	again := r.next()  // status read after the reconnect wait
	r.line()           // the new stream's first frame
	// Waits end on the continuous clock, read in whole milliseconds (as
	// upstream's): a wait that began 0.9 ms into a millisecond ends up to that
	// much before a microsecond-exact second (seen: 999.90 and 999.96 ms in 2
	// of 15 runs).
	require.GreaterOrEqual(t, again.at.Sub(closed.at), time.Second-time.Millisecond, "reconnected before the retry:1000 guidance")
	require.Equal(t, []string{"election_status", "election_watch", "election_status", "election_status", "election_watch", "election_status"},
		watchRoutes(f)[1:7])
	require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
}

// A server that ends every stream at once and sends retry:0 (or a long
// retry) must not get more connections than the guidance allows: the k-th
// connection cannot start before (k-1) × max(guidance, 100 ms).
func TestWatchRetryGuidanceNoRequestStorm(t *testing.T) {
	for _, c := range []struct {
		retryMS, min int64
		conns        int
	}{
		{0, 100, 6},
		{1500, 1500, 3},
	} {
		t.Run(time.Duration(c.retryMS*int64(time.Millisecond)).String(), func(t *testing.T) {
			f := startFake(t)
			id := f.createElection()
			f.fault(map[string]any{"route": "election_watch", "kind": "sse", "sse_retry_ms": c.retryMS, "sse_close_after": 1})
			start := time.Now()
			r := startWatch(t, f, KindElection, id, "", 10*time.Second, true)
			proctest.WaitFor(t, 30*time.Second, "the reconnections", func() bool { return f.requests("election_watch") >= c.conns })
			require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
			elapsed := time.Since(start)
			conns := f.requests("election_watch")
			require.GreaterOrEqual(t, conns, c.conns, "the watch stopped reconnecting")
			limit := int(elapsed/(time.Duration(c.min)*time.Millisecond)) + 1
			require.LessOrEqual(t, conns, limit, "%d connections in %v with retry:%d", conns, elapsed, c.retryMS)
			// Each connection read status first and reconciled its one frame.
			// (plus one when stopped between a status read and its connect).
			require.LessOrEqual(t, f.requests("election_status"), 2*conns+1)
		})
	}
}

// A frame over 64 KiB ends the watch with 70; one of exactly 64 KiB is a
// normal data frame that triggers a reconcile.
func TestWatchOversizedFrame(t *testing.T) {
	f := startFake(t)
	id := f.createElection()
	// The fake's frame is "data: " + N bytes + "\n\n".
	f.fault(map[string]any{"route": "election_watch", "kind": "sse", "sse_frame_bytes": maxSSEFrameBytes - 8, "count": 1})
	r := startWatch(t, f, KindElection, id, "", 10*time.Second, true)
	for i := 1; i <= 3; i++ {
		require.Contains(t, r.line(), `"sequence":`+string(rune('0'+i))+`,`)
	}
	require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))

	f.fault(map[string]any{"route": "election_watch", "kind": "sse", "sse_frame_bytes": maxSSEFrameBytes - 7, "count": 1})
	r = startWatch(t, f, KindElection, id, "", 10*time.Second, true)
	r.line()
	require.Equal(t, ExitSoftware, r.exit())
	require.Equal(t, "octostore: watch SSE frame exceeded 65536 bytes\n", r.diag.String())
	require.Len(t, r.out.all(), 1, "only the status read before the stream was printed")
}

// Failures before and while connecting (docs/protocol.md "Watch" steps 1–2).
func TestWatchFailures(t *testing.T) {
	t.Run("non-retryable initial status exits 70 before connecting", func(t *testing.T) {
		f := startFake(t)
		f.fault(map[string]any{"route": "election_status", "kind": "error", "status": 400, "count": 1})
		r := startWatch(t, f, KindElection, "room-0001", "", 10*time.Second, true)
		require.Equal(t, ExitSoftware, r.exit())
		require.Regexp(t, `^octostore: Invalid input: injected fault \(request req_[0-9a-f]{32}\)\n$`, r.diag.String())
		require.Zero(t, f.requests("election_watch"))
		require.Empty(t, r.out.all())
	})
	t.Run("retryable initial status is logged and the stream still reconciles", func(t *testing.T) {
		f := startFake(t)
		f.fault(map[string]any{"route": "election_status", "kind": "error", "status": 503, "count": 1})
		r := startWatch(t, f, KindElection, "room-0001", "", 10*time.Second, true)
		require.Contains(t, r.line(), `"sequence":1,`)
		require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
		require.Regexp(t, `^octostore: watch reconcile failed: Internal server error \(request req_[0-9a-f]{32}\)\n$`, r.diag.String())
	})
	t.Run("non-retryable refusal of the stream exits 70", func(t *testing.T) {
		f := startFake(t)
		f.fault(map[string]any{"route": "election_watch", "kind": "error", "status": 403})
		r := startWatch(t, f, KindElection, "room-0001", "", 10*time.Second, true)
		r.line()
		require.Equal(t, ExitSoftware, r.exit())
		require.Regexp(t, `^octostore: Forbidden: injected fault \(request req_[0-9a-f]{32}\)\n$`, r.diag.String())
	})
	t.Run("retryable refusal waits its guidance and starts over with status", func(t *testing.T) {
		f := startFake(t)
		f.fault(map[string]any{"route": "election_watch", "kind": "error", "status": 429, "retry_after_ms": 300, "count": 1})
		r := startWatch(t, f, KindElection, "room-0001", "", 10*time.Second, true)
		refused := r.next() // the refusal comes after this status read
		again := r.next()
		require.GreaterOrEqual(t, again.at.Sub(refused.at), 300*time.Millisecond)
		r.line()
		require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
		require.Regexp(t, `^octostore: watch unavailable: Rate limit exceeded; retry in 1 seconds \(request req_[0-9a-f]{32}\)\n$`, r.diag.String())
		require.Equal(t, []string{"election_status", "election_watch", "election_status", "election_watch", "election_status"}, watchRoutes(f))
	})
	t.Run("headers later than the request timeout", func(t *testing.T) {
		f := startFake(t)
		f.fault(map[string]any{"route": "election_watch", "kind": "stall_headers", "count": 1})
		r := startWatch(t, f, KindElection, "room-0001", "", 2*time.Second, true)
		for range 3 {
			r.line()
		}
		require.Equal(t, ExitSIGTERM, r.stop(syscall.SIGTERM))
		require.Equal(t, "octostore: watch connection timed out before response headers\n", r.diag.String())
	})
	t.Run("dropped connection", func(t *testing.T) {
		f := startFake(t)
		// Two drops: Go's transport may retry a GET once by itself when a
		// reused connection dies, and this test is about what the watch
		// does when the request really fails.
		f.fault(map[string]any{"route": "election_watch", "kind": "drop", "count": 2})
		r := startWatch(t, f, KindElection, "room-0001", "", 10*time.Second, true)
		for range 3 {
			r.line()
		}
		require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
		require.Regexp(t, `^(octostore: watch connection failed: could not confirm the server response\n){1,2}$`, r.diag.String())
	})
	t.Run("a failed data-triggered reconcile only logs, even when non-retryable", func(t *testing.T) {
		f := startFake(t)
		f.fault(map[string]any{"route": "election_status", "kind": "error", "status": 400, "skip": 1, "count": 1})
		r := startWatch(t, f, KindElection, "room-0001", "", 10*time.Second, true)
		r.line()
		// The stream's first frame reconciles into the fault; only after
		// that is logged is the stream known to be subscribed.
		proctest.WaitFor(t, 20*time.Second, "a logged reconcile failure", func() bool {
			return strings.Contains(r.diag.String(), "octostore: watch reconcile failed: Invalid input: injected fault")
		})
		f.post("/elections/room-0001/campaign", map[string]any{"candidate_id": "agent-a", "ttl_seconds": 30})
		require.Contains(t, r.line(), `"sequence":2,`)
		require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
	})
	t.Run("cancelled context counts as SIGTERM", func(t *testing.T) {
		f := startFake(t)
		srv, err := ValidateServer(f.url, false, false)
		require.NoError(t, err)
		c, err := NewClient(ClientOptions{Server: srv, ConnectTimeout: time.Second, RequestTimeout: 10 * time.Second})
		require.NoError(t, err)
		out := newSink()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- (&watch{Client: c, Kind: KindElection, Name: "room-0001", JSON: true, Out: out}).Run(ctx, nil)
		}()
		<-out.ch
		cancel()
		select {
		case code := <-done:
			require.Equal(t, ExitSIGTERM, code)
		case <-time.After(20 * time.Second):
			t.Fatal("watch ignored its context")
		}
	})
}

// Lock watch sends the bearer token and redacts it from every snapshot
// string, also when the server reflects it into the status.
func TestLockWatchRedactsToken(t *testing.T) {
	f := startLockFake(t)
	postAuth(f, "/locks/repo%2Fx/acquire", map[string]any{"ttl_seconds": 60})
	f.fault(map[string]any{"route": "lock_status", "kind": "reflect_token"})
	r := startWatch(t, f, KindLock, "repo/x", lockTestToken, 10*time.Second, true)
	want := `{"schema_version":1,"sequence":<SEQ>,"event":"snapshot","kind":"lock","name":"repo/x","server":"` + f.url +
		`","snapshot":{"expires_at":"<TS>","fencing_token":<N>,"holder_id":"[REDACTED]","metadata":"[REDACTED]","name":"repo/x","status":"held"},"observed_at":"<TS>"}`
	matchLine(t, strings.Replace(want, "<SEQ>", "1", 1), r.line())
	matchLine(t, strings.Replace(want, "<SEQ>", "2", 1), r.line())
	f.post("/__control/expire", map[string]any{"lock": "repo/x"})
	matchLine(t, `{"schema_version":1,"sequence":3,"event":"snapshot","kind":"lock","name":"repo/x","server":"`+f.url+
		`","snapshot":{"expires_at":null,"fencing_token":<N>,"holder_id":null,"metadata":"[REDACTED]","name":"repo/x","status":"free"},"observed_at":"<TS>"}`,
		r.line())
	require.Equal(t, ExitSIGINT, r.stop(syscall.SIGINT))
	for _, l := range r.out.all() {
		require.NotContains(t, l, lockTestToken)
	}
	require.Empty(t, r.diag.String())
}
