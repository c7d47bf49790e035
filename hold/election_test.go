package hold

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

var authorityBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bin, cleanup, err := authorityProgram()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	authorityBin = bin
	return m.Run()
}

// fake is one running testbin/authority process.
type fake struct {
	t   *testing.T
	url string
}

func startFake(t *testing.T) *fake {
	t.Helper()
	if authorityBin == "" {
		t.Fatalf("testbin/authority was not built for %s", runtime.GOOS)
	}
	cmd := exec.Command(authorityBin, "--listen", "127.0.0.1:0", "--token", "t")
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
		if cmd.ProcessState == nil {
			t.Errorf("authority process %d did not exit", cmd.Process.Pid)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading authority URL: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return &fake{t: t, url: strings.TrimSpace(line)}
}

func (f *fake) post(path string, body any) []byte {
	f.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	resp, err := http.Post(f.url+path, "application/json", r)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		f.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
	}
	return data
}

func (f *fake) fault(v map[string]any) { f.t.Helper(); f.post("/__control/faults", v) }

func (f *fake) createElection() string {
	f.t.Helper()
	var v struct {
		ElectionID string `json:"election_id"`
	}
	if err := json.Unmarshal(f.post("/elections", nil), &v); err != nil || v.ElectionID == "" {
		f.t.Fatalf("create election: %v %+v", err, v)
	}
	return v.ElectionID
}

func (f *fake) requests(route string) int {
	f.t.Helper()
	resp, err := http.Get(f.url + "/__control/requests?route=" + route)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v []json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		f.t.Fatal(err)
	}
	return len(v)
}

// lineSink collects the hold's stdout and announces each line.
type lineSink struct {
	mu    sync.Mutex
	buf   []byte
	lines [][]byte
	ch    chan []byte
}

func newSink() *lineSink { return &lineSink{ch: make(chan []byte, 1000)} }

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := append([]byte(nil), s.buf[:i]...)
		s.buf = s.buf[i+1:]
		s.lines = append(s.lines, line)
		s.ch <- line
	}
	return len(p), nil
}

// holdRun is one electionHold running in the background.
// bgRun is a hold running in the background, its stdout collected; the
// election and lock test runs embed it.
type bgRun struct {
	t       *testing.T
	out     *lineSink
	signals chan os.Signal
	done    chan int
}

type holdRun struct {
	bgRun
	hold *electionHold
}

type holdOpt func(*electionHold)

func startHold(t *testing.T, f *fake, id, candidate string, ttl time.Duration, opts ...holdOpt) *holdRun {
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
	h := &electionHold{
		Client: c, Clock: SystemClock{}, Jitter: FixedJitter(500),
		ElectionID: id, Candidate: candidate, TTL: ttl,
		ShutdownTimeout: 5 * time.Second, Diag: &bytes.Buffer{},
	}
	for _, o := range opts {
		o(h)
	}
	r := &holdRun{bgRun: bgRun{t: t, out: newSink()}, hold: h}
	h.Out = r.out
	r.signals, r.done = runInBackground(t, h.Run)
	return r
}

// runInBackground runs a hold's Run in a goroutine; if the test ends before the
// hold does, the hold is sent SIGINT and awaited, so no run outlives its test.
func runInBackground(t *testing.T, run func(context.Context, <-chan os.Signal) int) (chan os.Signal, chan int) {
	signals, done := make(chan os.Signal, 1), make(chan int, 1)
	go func() { done <- run(context.Background(), signals) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			signals <- syscall.SIGINT
			<-done
		}
	})
	return signals, done
}

// next waits for the next stdout line and returns its decoded fields.
func (r *bgRun) next() map[string]any {
	r.t.Helper()
	select {
	case line := <-r.out.ch:
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			r.t.Fatalf("bad line %s: %v", line, err)
		}
		return m
	case <-time.After(15 * time.Second):
		r.t.Fatal("timed out waiting for an event")
		return nil
	}
}

// expectNext reads lines until one is not skip, then checks it is want.
func (r *bgRun) expectNext(want, reason string, skip ...string) map[string]any {
	r.t.Helper()
	for {
		m := r.next()
		ev := m["event"].(string)
		if slices.Contains(skip, ev) && ev != want {
			continue
		}
		if ev != want || (reason != "" && m["reason_code"] != reason) {
			r.t.Fatalf("got event %v reason %v, want %s %s", ev, m["reason_code"], want, reason)
		}
		return m
	}
}

// exitCode waits for the hold's exit status and puts it back for Cleanup.
func (r *bgRun) exitCode() int {
	r.t.Helper()
	var code int
	select {
	case code = <-r.done:
	case <-time.After(15 * time.Second):
		r.t.Fatal("hold did not exit")
	}
	r.done <- code
	return code
}

// finish waits for the exit status and validates every line with the
// supervisor's own validator, returning the event names.
func (r *holdRun) finish(wantCode int) []string {
	r.t.Helper()
	code := r.exitCode()
	if code != wantCode {
		r.t.Errorf("exit code %d, want %d; diag: %s", code, wantCode, r.hold.Diag.(*bytes.Buffer).String())
	}
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	if len(r.out.buf) != 0 {
		r.t.Errorf("unterminated output %q", r.out.buf)
	}
	st := events.NewStream(events.Expect{Kind: events.Election, Name: r.hold.ElectionID, Candidate: r.hold.Candidate})
	var names []string
	for i, line := range r.out.lines {
		ev, err := st.Next(line)
		if err != nil {
			r.t.Errorf("line %d %s rejected by the supervisor: %v", i+1, line, err)
			continue
		}
		if ev.Sequence != uint64(i+1) {
			r.t.Errorf("line %d has sequence %d", i+1, ev.Sequence)
		}
		if ev.Server != r.hold.Client.server.URL {
			r.t.Errorf("server %q", ev.Server)
		}
		names = append(names, ev.Event)
	}
	return names
}

func sameEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events %v, want %v", got, want)
	}
}

func durPtr(d time.Duration) *time.Duration { return &d }

func TestElectionHoldLeaderRenewRelease(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	// A short first renewal, then the server's normal ttl/2 schedule.
	f.fault(map[string]any{"route": "campaign", "kind": "timing", "renew_after_ms": 200, "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	leader := r.expectNext(events.Leader, "")
	if rem := leader["authority_remaining_ms"].(float64); rem <= 3000 || rem > 4000 {
		t.Errorf("authority_remaining_ms %v, want about 4000", rem)
	}
	renewed := r.expectNext(events.Renewed, "")
	if renewed["term"] != leader["term"] {
		t.Errorf("renewed term %v, leader term %v", renewed["term"], leader["term"])
	}
	r.signals <- syscall.SIGTERM
	rel := r.expectNext(events.Released, ReasonSignal)
	if rel["term"] != leader["term"] {
		t.Errorf("released term %v", rel["term"])
	}
	if _, ok := rel["expires_at"]; ok {
		t.Error("released carries expires_at")
	}
	sameEvents(t, r.finish(ExitSIGTERM), events.Leader, events.Renewed, events.Released)
	if n := f.requests("resign"); n != 1 {
		t.Errorf("%d resign requests", n)
	}
}

func TestElectionHoldFollowerThenLeader(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.post("/elections/"+id+"/campaign", map[string]any{"candidate_id": "other", "ttl_seconds": 30})
	f.fault(map[string]any{"route": "campaign", "kind": "timing", "retry_after_ms": 200})
	r := startHold(t, f, id, "agent-b", 5*time.Second)
	w := r.expectNext(events.Waiting, ReasonFollower)
	if w["retry_after_ms"] != float64(210) { // 200 ms guidance + 5 % jitter
		t.Errorf("retry_after_ms %v, want 210", w["retry_after_ms"])
	}
	f.post("/__control/expire", map[string]any{"election_id": id})
	r.expectNext(events.Leader, "", events.Waiting)
	r.signals <- syscall.SIGINT
	r.expectNext(events.Released, ReasonSignal)
	names := r.finish(ExitSIGINT)
	if len(names) < 3 || names[len(names)-2] != events.Leader || names[len(names)-1] != events.Released {
		t.Errorf("events %v", names)
	}
	for _, n := range names[:len(names)-2] {
		if n != events.Waiting {
			t.Errorf("events %v", names)
		}
	}
}

func TestElectionHoldIdentityMismatch(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "wrong_candidate", "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	m := r.expectNext(events.Uncertain, reasonAuthorityIdentityMismatch)
	if _, ok := m["term"]; ok {
		t.Error("pre-authority uncertain carries a term")
	}
	sameEvents(t, r.finish(ExitLost), events.Uncertain)
	if n := f.requests("resign"); n != 1 {
		t.Errorf("%d resign requests, want 1", n)
	}
}

func TestElectionHoldLateInitialAuthority(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	// 0.8 × 5 s = 4 s: the leader answer arrives too late to be authority
	// (4.5 s of the hold's clock pass while it is in flight).
	clk := newManualClock()
	r := startHold(t, f, id, "agent-a", 5*time.Second, withClock(clk), func(h *electionHold) {
		arriveLate(t, h.Client, clk, pathCampaign, 4500*time.Millisecond)
	})
	r.expectNext(events.Uncertain, ReasonInitialAuthorityDeadline)
	sameEvents(t, r.finish(ExitLost), events.Uncertain)
}

func TestElectionHoldAcquireTimeout(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.post("/elections/"+id+"/campaign", map[string]any{"candidate_id": "other", "ttl_seconds": 30})
	f.fault(map[string]any{"route": "campaign", "kind": "timing", "retry_after_ms": 150})
	r := startHold(t, f, id, "agent-a", 5*time.Second, func(h *electionHold) { h.AcquireTimeout = durPtr(600 * time.Millisecond) })
	r.expectNext(events.Error, ReasonAcquireTimeout, events.Waiting)
	names := r.finish(ExitAcquireTimeout)
	if len(names) < 2 || names[0] != events.Waiting {
		t.Errorf("events %v", names)
	}
}

func TestElectionHoldAcquireTimeoutZero(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	r := startHold(t, f, id, "agent-a", 5*time.Second, func(h *electionHold) { h.AcquireTimeout = durPtr(0) })
	r.expectNext(events.Error, ReasonAcquireTimeout)
	sameEvents(t, r.finish(ExitAcquireTimeout), events.Error)
	if n := f.requests("campaign"); n != 0 {
		t.Errorf("%d campaigns after a zero acquire timeout", n)
	}
}

func TestElectionHoldAcquireTimeoutDuringCampaign(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "stall_headers", "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second, func(h *electionHold) { h.AcquireTimeout = durPtr(300 * time.Millisecond) })
	r.expectNext(events.Error, ReasonAcquireTimeout)
	sameEvents(t, r.finish(ExitAcquireTimeout), events.Error)
}

func TestElectionHoldRetryableThenFatal(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "error", "status": 429, "code": "rate_limited", "retry_after_ms": 100, "count": 1})
	f.fault(map[string]any{"route": "campaign", "kind": "error", "status": 400, "code": "invalid_input", "skip": 1, "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	w := r.expectNext(events.Waiting, "rate_limited")
	if w["retry_after_ms"] != float64(105) {
		t.Errorf("retry_after_ms %v, want 105", w["retry_after_ms"])
	}
	r.expectNext(events.Error, "invalid_input")
	sameEvents(t, r.finish(ExitUsage), events.Waiting, events.Error)
	if d := r.hold.Diag.(*bytes.Buffer).String(); !strings.Contains(d, "octostore: ") {
		t.Errorf("no diagnostic: %q", d)
	}
}

func TestElectionHoldRenewProvesLoss(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "timing", "renew_after_ms": 300, "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	leader := r.expectNext(events.Leader, "")
	f.post("/__control/revoke", map[string]any{"election_id": id, "candidate_id": "usurper"})
	lost := r.expectNext(events.Lost, "lease_not_current")
	if lost["term"] != leader["term"] || lost["expires_at"] != leader["expires_at"] {
		t.Errorf("lost %v after leader %v", lost, leader)
	}
	sameEvents(t, r.finish(ExitLost), events.Leader, events.Lost)
	if n := f.requests("campaign"); n != 1 {
		t.Errorf("%d campaigns, want exactly 1", n)
	}
}

func TestElectionHoldRenewTermChanged(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "timing", "renew_after_ms": 200, "count": 1})
	f.fault(map[string]any{"route": "election_renew", "kind": "wrong_term", "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	r.expectNext(events.Leader, "")
	r.expectNext(events.Lost, ReasonTermChanged)
	sameEvents(t, r.finish(ExitLost), events.Leader, events.Lost)
}

func TestElectionHoldRenewalStall(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "timing", "renew_after_ms": 200, "count": 1})
	f.fault(map[string]any{"route": "election_renew", "kind": "stall_headers"})
	clk := newManualClock()
	r := startHold(t, f, id, "agent-a", 5*time.Second, withClock(clk), slowRequests(t))
	leader := r.expectNext(events.Leader, "")
	start := clk.Scheduler()
	clk.advance(200 * time.Millisecond) // renew_at
	f.waitRequests("election_renew", 1)
	// The safety deadline is 4 s after the campaign started, which was no
	// later than start: the uncertain line must come with the clock there,
	// while the renewal still stalls.
	clk.advance(3800 * time.Millisecond)
	u := r.expectNext(events.Uncertain, ReasonRenewalDeadlineExceeded)
	if el := clk.Scheduler().Sub(start); el > 4500*time.Millisecond {
		t.Errorf("uncertain after %v, past the 4 s safety deadline", el)
	}
	if u["term"] != leader["term"] || u["expires_at"] != leader["expires_at"] {
		t.Errorf("uncertain %v after leader %v", u, leader)
	}
	sameEvents(t, r.finish(ExitLost), events.Leader, events.Uncertain)
}

func TestElectionHoldReleaseUnconfirmed(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "resign", "kind": "resign_mismatch", "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	r.expectNext(events.Leader, "")
	r.signals <- syscall.SIGINT
	m := r.expectNext(events.Uncertain, ReasonReleaseUnconfirmed)
	if _, ok := m["expires_at"]; ok {
		t.Error("release_unconfirmed carries expires_at")
	}
	sameEvents(t, r.finish(ExitSIGINT), events.Leader, events.Uncertain)
}

func TestElectionHoldSignalBeforeAuthority(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	id := f.createElection()
	f.fault(map[string]any{"route": "campaign", "kind": "stall_headers", "count": 1})
	r := startHold(t, f, id, "agent-a", 5*time.Second)
	proctest.WaitFor(t, 5*time.Second, "the campaign request", func() bool { return f.requests("campaign") > 0 })
	r.signals <- syscall.SIGTERM
	sameEvents(t, r.finish(ExitSIGTERM))
}
