package hold

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/octostore-supervisor/supervisor/events"
)

// This file is `octostore election watch` and `octostore lock watch`
// (docs/protocol.md "Watch"): the SSE frame splitter with its 64 KiB cap, and
// the watch loop. The stream is only a hint that something changed: data is
// never parsed, every data frame triggers a fresh status read, and every
// reconnect reads status first, so what is printed is always the server's
// status, never a stream payload.

// errSSEFrameTooLarge is the watch's one fatal stream condition (exit 70): a
// frame, or unterminated pending data, longer than maxSSEFrameBytes. Its text
// is upstream's diagnostic.
var errSSEFrameTooLarge = errors.New("watch SSE frame exceeded " + strconv.Itoa(maxSSEFrameBytes) + " bytes")

// watchStreamTimeout replaces the request timeout for the stream itself:
// upstream raises it to 24 h so an idle but healthy stream is never cut.
const watchStreamTimeout = 24 * time.Hour

// sseFrames splits a server-sent-events byte stream into frames the way the
// upstream CLI does: a frame ends at the first "\n\n", else at the first
// "\r\n\r\n", and the size check happens before bytes are buffered, so a
// hostile server cannot make the client hold more than maxSSEFrameBytes.
// The zero value is ready to use.
type sseFrames struct {
	buf []byte
}

// Feed adds one chunk and returns the frames it completed, in order,
// terminators included. When the chunk would make a frame (or the pending
// unterminated data) exceed maxSSEFrameBytes, Feed returns the frames that
// completed before that point together with errSSEFrameTooLarge; the stream
// must then be abandoned.
func (s *sseFrames) Feed(chunk []byte) ([][]byte, error) {
	var frames [][]byte
	for len(chunk) > 0 {
		n, err := s.appendBytes(chunk)
		if err != nil {
			return frames, err
		}
		chunk = chunk[n:]
		for {
			end := findSSEFrame(s.buf)
			if end < 0 {
				break
			}
			frames = append(frames, append([]byte(nil), s.buf[:end]...))
			s.buf = append(s.buf[:0], s.buf[end:]...)
		}
	}
	return frames, nil
}

// Pending is the number of buffered bytes of the unfinished frame.
func (s *sseFrames) Pending() int { return len(s.buf) }

// appendBytes buffers p up to and including the first frame terminator that
// p completes (looking back over the last three buffered bytes, since a
// terminator can straddle chunks), refusing anything that would exceed the
// cap. It returns how many bytes of p it took.
func (s *sseFrames) appendBytes(p []byte) (int, error) {
	var tail [8]byte
	suffix := append(tail[:0], s.buf[max(len(s.buf)-3, 0):]...)
	frameEnd := -1
	for i, c := range p {
		suffix = append(suffix, c)
		if len(suffix) > 4 {
			suffix = append(suffix[:0], suffix[1:]...)
		}
		if bytes.HasSuffix(suffix, []byte("\n\n")) || bytes.HasSuffix(suffix, []byte("\r\n\r\n")) {
			frameEnd = len(s.buf) + i + 1
			break
		}
	}
	n := len(p)
	if frameEnd >= 0 {
		if frameEnd > maxSSEFrameBytes {
			return 0, errSSEFrameTooLarge
		}
		n = frameEnd - len(s.buf)
	} else if len(s.buf)+len(p) > maxSSEFrameBytes {
		return 0, errSSEFrameTooLarge
	}
	s.buf = append(s.buf, p[:n]...)
	return n, nil
}

// findSSEFrame returns the end of the first complete frame in b, or -1.
func findSSEFrame(b []byte) int {
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		return i + 2
	}
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return i + 4
	}
	return -1
}

// sseRetryMS returns the reconnect guidance of a frame: the first line of the
// form "retry:<u64>" (a trailing CR dropped, the value trimmed) whose value
// parses; lines that do not parse are skipped.
func sseRetryMS(frame []byte) (uint64, bool) {
	for _, line := range bytes.Split(frame, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		v, ok := bytes.CutPrefix(line, []byte("retry:"))
		if !ok || !utf8.Valid(v) {
			continue
		}
		if n, ok := parseRustU64(strings.TrimSpace(string(v))); ok {
			return n, true
		}
	}
	return 0, false
}

// sseHasData reports whether any line of the frame begins with "data:"; its
// content is never looked at, only that the server signalled a change.
func sseHasData(frame []byte) bool {
	for _, line := range bytes.Split(frame, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("data:")) {
			return true
		}
	}
	return false
}

// reconnectDelay is the wait before the next connection: the stream's
// retry: guidance when it sent one (clamped, at least 100 ms, later-only
// jitter; a server sending 0 still cannot cause a request storm), else local
// backoff by attempt (docs/protocol.md "Watch" step 4).
func reconnectDelay(guidanceMS *uint64, attempt uint32, bp uint32) time.Duration {
	if guidanceMS != nil {
		return guidedWaitDelay(*guidanceMS, bp)
	}
	return BackoffWaitDelay(attempt, bp)
}

// watch is `octostore election watch` / `octostore lock watch`
// (docs/protocol.md "Watch"). All fields are inputs; validation and loading the
// token are the caller's job.
type watch struct {
	Client *Client
	// Kind selects the election or lock routes; Name is the raw election id
	// or lock name.
	Kind Kind
	Name string
	// Token is the bearer token (locks only). It is sent on every request
	// and redacted from everything printed.
	Token string
	// JSON selects the JSONL snapshot lines; otherwise one human line each.
	JSON bool
	// Clock supplies observed_at (only Wall is used); nil is SystemClock.
	Clock  Clock
	Jitter Jitter
	// Out receives the snapshots, Diag the "octostore: …" diagnostics.
	Out, Diag io.Writer
}

// Run watches until a signal and returns the exit status
// (docs/protocol.md "Exit codes"): 130 (SIGINT, or any signal other than
// SIGTERM) or 143 (SIGTERM, or ctx cancelled), or 70 when the initial status
// read or the stream connection fails non-retryably, or a frame exceeds the
// cap. Never 0.
func (w *watch) Run(ctx context.Context, signals <-chan os.Signal) int {
	defaults(&w.Clock, &w.Jitter, &w.Out, &w.Diag)
	r := &watchRun{w: w, waiter: &Waiter{Clock: w.Clock, Signals: signals, Ctx: ctx}}
	return r.run()
}

// watchRun is one Run's state.
type watchRun struct {
	w       *watch
	waiter  *Waiter
	seq     uint64
	attempt uint32
	// err is a clock failure that ended a wait (exit 70).
	err error
}

// stopped is the exit status once a wait was interrupted: a signal's, or 70
// when the clock could not be read.
func (r *watchRun) stopped() int {
	if r.err != nil {
		r.diag(r.err.Error())
		return ExitSoftware
	}
	return r.waiter.signalExit()
}

func (r *watchRun) diag(msg string) {
	fmt.Fprintf(r.w.Diag, "octostore: %s\n", msg)
}

// safe prepares server-influenced text for stderr: the token redacted, then
// control characters escaped.
func (r *watchRun) safe(f *Failure) string {
	return TerminalSafe(f.DiagnosticRedacting(r.w.Token))
}

func (r *watchRun) nextAttempt() {
	if r.attempt < ^uint32(0) {
		r.attempt++
	}
}

func (r *watchRun) path() string {
	if r.w.Kind == KindLock {
		return "/locks/" + EncodeSegment(r.w.Name) + "/watch"
	}
	return "/elections/" + EncodeSegment(r.w.Name) + "/watch"
}

func (r *watchRun) run() int {
	for {
		// Step 1: every (re)connection starts from the server's status.
		snap, f, signalled := r.status()
		if signalled {
			return r.stopped()
		}
		switch {
		case f == nil:
			r.print(snap)
		case f.retryableBeforeAcquire():
			r.diag("watch reconcile failed: " + r.safe(f))
		default:
			r.diag(r.safe(f))
			return ExitSoftware
		}

		// Step 2: connect.
		resp, cancel, code, stop := r.connect()
		if stop {
			return code
		}
		if resp == nil {
			continue
		}

		// Step 3: read frames until the stream ends.
		guidance, code, stop := r.stream(resp, cancel)
		if stop {
			return code
		}

		// Step 4: wait, then go round again (status first).
		delay := reconnectDelay(guidance, r.attempt, r.w.Jitter())
		r.nextAttempt()
		if !r.sleep(delay) {
			return r.stopped()
		}
	}
}

// snapshot is one successful status read, ready to print.
type snapshot struct {
	json   []byte // alphabetical keys, token redacted
	status string
}

// wait runs op through Await, bounded by timeout (when positive) and raced
// against signals; interrupted reports a signal or a clock failure (r.err).
// op must return promptly once its context is cancelled: Await waits for it,
// so no request outlives the step.
func watchWait[T any](r *watchRun, timeout time.Duration, op func(context.Context) T) (v T, timedOut, interrupted bool) {
	d := forever
	if timeout > 0 {
		var err error
		if d, err = within(r.w.Clock, timeout); err != nil {
			r.err = err
			return v, false, true
		}
	}
	o, v, err := Await(r.waiter, d, true, nil, op)
	if err != nil {
		r.err = err
		return v, false, true
	}
	return v, o == DeadlineReached, o == Signalled
}

// onCancel runs fn with ctx's cancellation forwarded to cancel: the
// connection's own context, which must outlive a successful fn (the stream
// is read after it returns) but end when Await gives up on fn.
func onCancel[T any](ctx context.Context, cancel context.CancelFunc, fn func() T) T {
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	return fn()
}

type statusResult struct {
	snap snapshot
	err  error
}

// status reads the current status, bounded by the request timeout.
func (r *watchRun) status() (snapshot, *Failure, bool) {
	res, timedOut, interrupted := watchWait(r, r.w.Client.requestTimeout, func(ctx context.Context) statusResult {
		if r.w.Kind == KindLock {
			s, err := getLockStatus(ctx, r.w.Client, r.w.Name, r.w.Token)
			return statusResult{snapshot{json: s.JSON(r.w.Token), status: s.Status}, err}
		}
		s, err := getElectionStatus(ctx, r.w.Client, r.w.Name)
		return statusResult{snapshot{json: s.Snapshot(), status: s.Status}, err}
	})
	switch {
	case interrupted:
		return snapshot{}, nil, true
	case timedOut:
		return snapshot{}, &Failure{Code: CodeTransportError, Details: "watch reconciliation timed out", Transport: true,
			Cause: context.DeadlineExceeded}, false
	case res.err != nil:
		return snapshot{}, failureOf(res.err), false
	}
	return res.snap, nil, false
}

// print writes one snapshot line (docs/protocol.md "Watch" output).
func (r *watchRun) print(s snapshot) {
	if r.seq < ^uint64(0) {
		r.seq++
	}
	server := r.w.Client.server.URL
	if !r.w.JSON {
		fmt.Fprintf(r.w.Out, "%s %s · %s · authority %s\n", r.w.Kind,
			TerminalSafe(Redact(r.w.Name, r.w.Token)), TerminalSafe(Redact(s.status, r.w.Token)), TerminalSafe(server))
		return
	}
	// One Write per line, so a reader never sees half a snapshot.
	_, _ = r.w.Out.Write(SnapshotLine(r.seq, r.w.Kind, r.w.Name, server, s.json, r.w.Clock.Wall()))
}

// SnapshotLine is one --json line of a watch (docs/protocol.md "Watch"
// output): snapshot is the status object as `status --json` prints it. Every
// authority's watch prints through it, so their lines agree byte for byte.
func SnapshotLine(seq uint64, kind Kind, name, server string, snapshot []byte, observed time.Time) []byte {
	var w jsonWriter
	w.raw(`{"schema_version":1,"sequence":` + strconv.FormatUint(seq, 10) + `,"event":"snapshot","kind":`)
	w.str(kind.String())
	w.raw(`,"name":`)
	w.str(name)
	w.raw(`,"server":`)
	w.str(server)
	w.raw(`,"snapshot":`)
	w.raw(string(snapshot))
	w.raw(`,"observed_at":`)
	w.str(events.FormatTimestamp(observed))
	w.raw("}\n")
	return w.bytes()
}

// sleep waits d; false means a signal (or ctx, or a clock failure) came
// first.
func (r *watchRun) sleep(d time.Duration) bool {
	o, err := r.waiter.sleepFor(d, true)
	if err != nil {
		r.err = err
		return false
	}
	return o != Signalled
}

// backoff reports a failed connection attempt and waits: the failure's
// retry_after_ms guidance when it has one, else local backoff.
func (r *watchRun) backoff(msg string, f *Failure) (int, bool) {
	r.diag(msg)
	delay := waitDelay(f, r.attempt, r.w.Jitter())
	r.nextAttempt()
	if !r.sleep(delay) {
		return r.stopped(), true
	}
	return 0, false
}

type doResult struct {
	resp *http.Response
	err  error
}

// connect opens the stream (docs/protocol.md "Watch" step 2): the response
// headers must arrive within the request timeout; a non-200 is read as an error
// body. It returns the open 200 response and the function that ends it, or
// resp == nil when the caller should start over at step 1, or stop with an
// exit code.
func (r *watchRun) connect() (resp *http.Response, end context.CancelFunc, code int, stop bool) {
	c := r.w.Client
	ctx, cancel := context.WithTimeout(context.Background(), watchStreamTimeout)
	req, err := c.newRequest(ctx, request{Method: http.MethodGet, Path: r.path(), Accept: "text/event-stream", Bearer: r.w.Token})
	if err != nil {
		cancel()
		code, stop = r.backoff("watch connection failed: "+transportFailure(err).diagnostic(), nil)
		return nil, nil, code, stop
	}
	res, timedOut, interrupted := watchWait(r, c.requestTimeout, func(ctx context.Context) doResult {
		return onCancel(ctx, cancel, func() doResult {
			resp, err := c.http.Do(req)
			if err == nil && ctx.Err() != nil {
				// Await gave up on this connection and drops the answer.
				resp.Body.Close()
			}
			return doResult{resp, err}
		})
	})
	if !timedOut && !interrupted && res.err == nil && res.resp.StatusCode == http.StatusOK {
		return res.resp, cancel, 0, false
	}
	// From here on this connection is over, whatever happens next.
	defer func() {
		if res.resp != nil {
			res.resp.Body.Close()
		}
		cancel()
	}()
	switch {
	case interrupted:
		return nil, nil, r.stopped(), true
	case timedOut:
		code, stop = r.backoff("watch connection timed out before response headers", nil)
	case res.err != nil:
		code, stop = r.backoff("watch connection failed: "+transportFailure(res.err).diagnostic(), nil)
	default:
		code, stop = r.refused(res.resp, cancel)
	}
	return nil, nil, code, stop
}

// refused reads a non-200 answer's error body within the request timeout
// and backs off, unless the failure is final.
func (r *watchRun) refused(resp *http.Response, cancel context.CancelFunc) (code int, stop bool) {
	f, timedOut, interrupted := watchWait(r, r.w.Client.requestTimeout, func(ctx context.Context) *Failure {
		return onCancel(ctx, cancel, func() *Failure { return readFailure(resp) })
	})
	switch {
	case interrupted:
		return r.stopped(), true
	case timedOut:
		f = &Failure{Code: CodeTransportError, Details: "watch error response body timed out", Transport: true,
			Cause: context.DeadlineExceeded}
	case !f.retryableBeforeAcquire():
		r.diag(r.safe(f))
		return ExitSoftware, true
	}
	return r.backoff("watch unavailable: "+r.safe(f), f)
}

// readFailure decodes a non-200 answer like any API error
// (docs/protocol.md "Response handling"): x-request-id validated, the body
// bounded at 1 MiB and read in full before deciding.
func readFailure(resp *http.Response) *Failure {
	data, requestID, f := readBody(resp)
	if f != nil {
		return f
	}
	return decodeErrorResponse(resp.StatusCode, data, requestID)
}

type chunk struct {
	data []byte
	err  error
}

// stream reads the open watch response (docs/protocol.md "Watch" step 3) until
// it ends, and returns the last retry: guidance it carried, or stops with an
// exit code. Each chunk is read through Await, so a signal ends the read (by
// ending the connection) at once; the next chunk is read only once this
// one's frames are handled, so a slow reconcile slows the stream down
// instead of buffering it.
func (r *watchRun) stream(resp *http.Response, cancel context.CancelFunc) (guidance *uint64, code int, stop bool) {
	defer func() {
		cancel()
		resp.Body.Close()
	}()
	buf := make([]byte, 32<<10)
	var frames sseFrames
	for {
		c, _, interrupted := watchWait(r, 0, func(ctx context.Context) chunk {
			return onCancel(ctx, cancel, func() chunk {
				n, err := resp.Body.Read(buf)
				return chunk{data: append([]byte(nil), buf[:n]...), err: err}
			})
		})
		if interrupted {
			return nil, r.stopped(), true
		}
		done, err := frames.Feed(c.data)
		if code, stop := r.frames(done, &guidance); stop {
			return nil, code, true
		}
		if err != nil {
			r.diag(err.Error())
			return nil, ExitSoftware, true
		}
		if c.err != nil {
			// EOF, a reset or the 24 h bound: all mean "reconnect".
			return guidance, 0, false
		}
	}
}

// frames handles complete frames: retry: guidance is remembered, and every
// data frame triggers a status read whose snapshot is printed.
func (r *watchRun) frames(frames [][]byte, guidance **uint64) (code int, stop bool) {
	for _, frame := range frames {
		if g, ok := sseRetryMS(frame); ok {
			*guidance = &g
		}
		if !sseHasData(frame) {
			continue
		}
		snap, f, signalled := r.status()
		if signalled {
			return r.stopped(), true
		}
		if f != nil {
			// Even a non-retryable failure only logs here: the stream
			// is still open and the next change may reconcile.
			r.diag("watch reconcile failed: " + r.safe(f))
			continue
		}
		r.print(snap)
		r.attempt = 0
	}
	return 0, false
}
