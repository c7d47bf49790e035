package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
	"github.com/octostore-supervisor/supervisor/platform"
)

// The local authority's tests that hold on every OS: they run on Linux and
// macOS and, under Wine, on Windows. What differs by OS is named in
// local_unix_test.go and local_windows_test.go: localDirVar (the variable the
// default state directory derives from) and what a deletion or replacement of
// a locked file does there.
//
// Signals are values on the hold's channel. os.Interrupt is SIGINT on unix
// and what Ctrl-C delivers on Windows; syscall.SIGTERM is what the Go runtime
// delivers on Windows for a console close, logoff or shutdown, so both are
// signals a hold really receives on every OS.

// The cross-process tests re-execute this test binary as a hold. The switch
// is read in init, before TestMain, so the child neither builds test
// programs nor runs tests: it is one election hold and nothing else, on
// the default ("local") store of the directory in localDirVar.
const (
	localChildEnv       = "OCTOSTORE_HOLD_LOCAL_TEST_CHILD"
	localChildRoom      = "OCTOSTORE_HOLD_LOCAL_TEST_ROOM"
	localChildCandidate = "OCTOSTORE_HOLD_LOCAL_TEST_CANDIDATE"
	localChildPoll      = "OCTOSTORE_HOLD_LOCAL_TEST_POLL"
)

func init() {
	if os.Getenv(localChildEnv) == "1" {
		os.Exit(localChildMain())
	}
}

func localChildMain() int {
	store, err := OpenPrivate(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "octostore: %v\n", err)
		return hold.ExitUsage
	}
	defer store.Close()
	poll, err := time.ParseDuration(os.Getenv(localChildPoll))
	if err != nil {
		fmt.Fprintf(os.Stderr, "octostore: %v\n", err)
		return hold.ExitUsage
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	store.poll = poll
	spec := hold.HoldSpec{Kind: hold.KindElection, Name: os.Getenv(localChildRoom), Candidate: os.Getenv(localChildCandidate),
		TTL: 30 * time.Second, Out: os.Stdout, Diag: os.Stderr}
	return store.Hold(context.Background(), spec, sigs)
}

const testPoll = 20 * time.Millisecond

// renewTTL makes renewals come every 3 s with a 4.8 s budget: quick enough
// for tests, with 1.8 s of slack for a loaded machine before a renewal is
// late. (3 s, with 0.9 s of slack, was once too little under Wine while the
// etcd tests ran beside it: a renewal ended in uncertain,
// renewal_deadline_exceeded, as it must when one is late.)
const renewTTL = 6 * time.Second

// newLocalStore opens the default ("local") store of a private directory
// named in localDirVar; the returned env reopens the same store.
func newLocalStore(t *testing.T) (*Store, hold.LookupEnv) {
	t.Helper()
	env := localEnv(map[string]string{localDirVar: tempDir(t)})
	return openStore(t, env), env
}

func openStore(t *testing.T, env hold.LookupEnv) *Store {
	t.Helper()
	s, err := OpenPrivate(env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// chanWriter hands every Write (the emitter writes one whole line per call)
// to the test.
type chanWriter chan []byte

func (w chanWriter) Write(p []byte) (int, error) {
	w <- append([]byte(nil), p...)
	return len(p), nil
}

// localHold is one local hold running in a goroutine. Every line it prints is
// checked by the supervisor's own validator (events.Stream) as it is read.
type localHold struct {
	t      *testing.T
	server string
	stream *events.Stream
	lines  chanWriter
	sigs   chan os.Signal
	cancel context.CancelFunc
	done   chan int
	diag   *proctest.SyncBuffer
	seq    uint64
}

func runLocal(t *testing.T, s *Store, h *request, expect events.Expect) *localHold {
	server := s.Server()
	ctx, cancel := context.WithCancel(context.Background())
	r := &localHold{t: t, server: server, stream: events.NewStream(expect), sigs: make(chan os.Signal, 1),
		cancel: cancel, done: make(chan int, 1)}
	go func() { r.done <- s.hold(ctx, *h, r.sigs) }()
	t.Cleanup(func() {
		select {
		case code := <-r.done:
			r.done <- code
		default:
			r.sigs <- syscall.SIGTERM
			select {
			case <-r.done:
			case <-time.After(10 * time.Second):
				t.Errorf("local hold did not stop after SIGTERM")
			}
		}
		cancel()
	})
	return r
}

func startLocalElection(t *testing.T, s *Store, room, candidate string, mod ...func(*request)) *localHold {
	t.Helper()
	h := &request{HoldSpec: hold.HoldSpec{Kind: hold.KindElection, Clock: hold.SystemClock{}, Jitter: hold.FixedJitter(0), Name: room, Candidate: candidate,
		TTL: 30 * time.Second}, poll: testPoll}
	for _, m := range mod {
		m(h)
	}
	lines, diag := make(chanWriter, 1000), &proctest.SyncBuffer{}
	h.Out, h.Diag = lines, diag
	r := runLocal(t, s, h, events.Expect{Kind: events.Election, Name: room, Candidate: candidate})
	r.lines, r.diag = lines, diag
	return r
}

func startLocalLock(t *testing.T, s *Store, name string, mod ...func(*request)) *localHold {
	t.Helper()
	h := &request{HoldSpec: hold.HoldSpec{Kind: hold.KindLock, Clock: hold.SystemClock{}, Jitter: hold.FixedJitter(0), Name: name,
		TTL: 120 * time.Second}, poll: testPoll}
	for _, m := range mod {
		m(h)
	}
	lines, diag := make(chanWriter, 1000), &proctest.SyncBuffer{}
	h.Out, h.Diag = lines, diag
	r := runLocal(t, s, h, events.Expect{Kind: events.Lock, Name: name})
	r.lines, r.diag = lines, diag
	return r
}

// next returns the next event, validated as the supervisor validates it.
func (r *localHold) next(timeout time.Duration) (events.Event, map[string]any) {
	r.t.Helper()
	select {
	case line := <-r.lines:
		require.True(r.t, bytes.HasSuffix(line, []byte("\n")), "unterminated line %q", line)
		line = bytes.TrimSuffix(line, []byte("\n"))
		require.NotContains(r.t, string(line), "\n")
		ev, err := r.stream.Next(line)
		require.NoError(r.t, err, "line %s rejected by the supervisor's validator", line)
		r.seq++
		require.Equal(r.t, r.seq, ev.Sequence)
		require.Equal(r.t, r.server, ev.Server)
		var m map[string]any
		require.NoError(r.t, json.Unmarshal(line, &m))
		return ev, m
	case <-time.After(timeout):
		r.t.Fatalf("no event within %v; diag: %s", timeout, r.diag)
		return events.Event{}, nil
	}
}

func (r *localHold) expect(event, reason string) (events.Event, map[string]any) {
	r.t.Helper()
	ev, m := r.next(10 * time.Second)
	require.Equal(r.t, event, ev.Event, "line %v; diag: %s", m, r.diag)
	require.Equal(r.t, reason, ev.ReasonCode, "line %v", m)
	return ev, m
}

func (r *localHold) quiet(d time.Duration) {
	r.t.Helper()
	select {
	case line := <-r.lines:
		r.t.Fatalf("unexpected event %s", line)
	case <-time.After(d):
	}
}

func (r *localHold) exit() int {
	r.t.Helper()
	select {
	case code := <-r.done:
		r.done <- code
		select {
		case line := <-r.lines:
			r.t.Fatalf("event after exit: %s", line)
		default:
		}
		return code
	case <-time.After(10 * time.Second):
		r.t.Fatalf("hold did not exit; diag: %s", r.diag)
		return 0
	}
}

func (r *localHold) authority() (uint64, events.Authority) {
	r.t.Helper()
	ev, m := r.next(10 * time.Second)
	return r.authorityIn(ev, m)
}

// authorityPastProbes is authority for a candidate that races a status
// probe (a watch polling the same room): the probe holds the lock shared for
// a moment, and a candidate that tries it then says it waits (follower) and
// tries again a poll later. Under Wine the moment is long enough to be hit.
func (r *localHold) authorityPastProbes() (uint64, events.Authority) {
	r.t.Helper()
	ev, m := r.next(10 * time.Second)
	for ev.Event == events.Waiting && m["reason_code"] == "follower" {
		ev, m = r.next(10 * time.Second)
	}
	return r.authorityIn(ev, m)
}

func (r *localHold) authorityIn(ev events.Event, m map[string]any) (uint64, events.Authority) {
	r.t.Helper()
	require.True(r.t, ev.StartsAuthority() || ev.Event == events.Renewed, "got %v; diag: %s", m, r.diag)
	require.NotNil(r.t, ev.Authority)
	return *ev.Term, *ev.Authority
}

// planAccepted checks the budget the way the supervisor arms its watchdog
// (TERM grace 1 s; the 20 s silence cap applies to locks).
func planAccepted(t *testing.T, a events.Authority, silenceCap time.Duration) {
	t.Helper()
	cont, err := platform.ContinuousMillis()
	require.NoError(t, err)
	_, err = events.Plan(a, events.Clocks{WallMs: time.Now().UnixMilli(), ContinuousMs: cont}, time.Second, silenceCap)
	require.NoError(t, err)
}

func TestLocalElectionExclusionAndHandover(t *testing.T) {
	s, _ := newLocalStore(t)
	a := startLocalElection(t, s, "room-1", "agent-a")
	termA, auth := a.authority()
	planAccepted(t, auth, 0)

	b := startLocalElection(t, s, "room-1", "agent-b")
	_, m := b.expect(events.Waiting, hold.ReasonFollower)
	require.EqualValues(t, testPoll/time.Millisecond, m["retry_after_ms"])
	b.quiet(15 * testPoll) // many polls: still excluded, and only one waiting line

	st, err := s.status(hold.KindElection, "room-1")
	require.NoError(t, err)
	require.True(t, st.Held)
	require.NotNil(t, st.Holder)
	require.Equal(t, "agent-a", st.Holder.CandidateID)
	require.Equal(t, termA, st.Holder.Term)
	require.Equal(t, os.Getpid(), st.Holder.PID)

	a.sigs <- syscall.SIGTERM
	ev, _ := a.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, termA, *ev.Term)
	require.Equal(t, hold.ExitSIGTERM, a.exit())

	termB, _ := b.authority()
	require.Greater(t, termB, termA)
	b.sigs <- os.Interrupt
	b.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGINT, b.exit())

	st, err = s.status(hold.KindElection, "room-1")
	require.NoError(t, err)
	require.False(t, st.Held)
	require.Nil(t, st.Holder)
	_, err = os.Stat(filepath.Join(s.Dir(), "elections", "room-1.holder"))
	require.ErrorIs(t, err, os.ErrNotExist, "a clean release removes the holder record")
}

// Terms strictly increase across 50 hand-overs between two candidates,
// across store reopenings (restarts), and are shared with locks.
func TestLocalTermsIncreaseAcross50Handovers(t *testing.T) {
	s, env := newLocalStore(t)
	names := []string{"agent-a", "agent-b"}
	cur := startLocalElection(t, s, "room", names[0])
	last, _ := cur.authority()
	for i := 1; i <= 50; i++ {
		store := s
		if i%10 == 0 {
			store = openStore(t, env) // a restarted process opens the directory afresh
		}
		next := startLocalElection(t, store, "room", names[i%2])
		next.expect(events.Waiting, hold.ReasonFollower)
		cur.sigs <- syscall.SIGTERM
		cur.expect(events.Released, hold.ReasonSignal)
		require.Equal(t, hold.ExitSIGTERM, cur.exit())
		term, _ := next.authority()
		require.Greater(t, term, last, "hand-over %d", i)
		last, cur = term, next
		if i%10 == 5 {
			// A lock taken between hand-overs draws from the same counter.
			lk := startLocalLock(t, store, "between/handovers")
			lt, _ := lk.authority()
			require.Greater(t, lt, last)
			last = lt
			lk.sigs <- os.Interrupt
			lk.expect(events.Released, hold.ReasonSignal)
			require.Equal(t, hold.ExitSIGINT, lk.exit())
		}
	}
	cur.sigs <- os.Interrupt
	cur.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGINT, cur.exit())
}

// Budgets follow the HTTP holds: election 0.8 × TTL; lock 0.8 × min(TTL,
// 30 s) — the HTTP lock's session bound — and both pass the supervisor.
func TestLocalBudgetsMatchHTTPHolds(t *testing.T) {
	s, _ := newLocalStore(t)
	before := time.Now()
	e := startLocalElection(t, s, "budget", "agent-a")
	ev, m := e.expect(events.Leader, "")
	require.LessOrEqual(t, ev.Authority.RemainingMs, uint64(24000))
	require.Greater(t, ev.Authority.RemainingMs, uint64(22000))
	exp, err := time.Parse(time.RFC3339Nano, m["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(30*time.Second), exp, 5*time.Second)
	planAccepted(t, *ev.Authority, 0)

	l := startLocalLock(t, s, "repo/octostore/issue-1842")
	ev, m = l.expect(events.Acquired, "")
	require.Nil(t, ev.CandidateID)
	require.LessOrEqual(t, ev.Authority.RemainingMs, uint64(24000))
	require.Greater(t, ev.Authority.RemainingMs, uint64(22000))
	exp, err = time.Parse(time.RFC3339Nano, m["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(120*time.Second), exp, 5*time.Second)
	planAccepted(t, *ev.Authority, 20*time.Second)

	st, err := s.status(hold.KindLock, "repo/octostore/issue-1842")
	require.NoError(t, err)
	require.True(t, st.Held)
	require.Equal(t, *ev.Term, st.Holder.Term)

	l.cancel() // a cancelled context is a SIGTERM
	l.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGTERM, l.exit())
	e.sigs <- os.Interrupt
	e.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGINT, e.exit())
}

func TestLocalRenewalsKeepTermAndRefreshRecord(t *testing.T) {
	s, _ := newLocalStore(t)
	h := startLocalElection(t, s, "renew", "agent-a", func(h *request) { h.TTL = renewTTL })
	term, auth := h.authority()
	require.LessOrEqual(t, auth.RemainingMs, uint64(hold.SafetyDuration(renewTTL)/time.Millisecond))
	st0, err := s.status(hold.KindElection, "renew")
	require.NoError(t, err)
	for range 3 {
		ev, _ := h.expect(events.Renewed, "")
		require.Equal(t, term, *ev.Term)
		require.LessOrEqual(t, ev.Authority.RemainingMs, uint64(hold.SafetyDuration(renewTTL)/time.Millisecond))
		require.Greater(t, ev.Authority.RemainingMs, uint64(0))
	}
	st, err := s.status(hold.KindElection, "renew")
	require.NoError(t, err)
	require.True(t, st.Holder.ExpiresAt.After(st0.Holder.ExpiresAt), "renewals move expires_at in the record")
	h.sigs <- syscall.SIGTERM
	h.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, hold.ExitSIGTERM, h.exit())
}

// removeLockFile deletes a locked lock file from outside the hold, as a user
// or a cleanup script would, and reports whether its name is gone now. On
// unix it always is. On Windows the hold's handle allows the deletion
// (FILE_SHARE_DELETE, as os.Root opens files), but where the delete has
// Win32 (not POSIX) semantics, as under Wine, it only marks the file delete
// pending: the name keeps naming the same, still locked file until its last
// handle closes (lockDeletionMayBeDeferred).
func removeLockFile(t *testing.T, s *Store, rel string) bool {
	t.Helper()
	p := filepath.Join(s.Dir(), rel)
	before, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.Remove(p), "removing a locked lock file")
	after, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	require.NoError(t, err)
	require.True(t, lockDeletionMayBeDeferred, "%s still exists after its deletion", p)
	require.True(t, os.SameFile(before, after), "%s names another file after its deferred deletion", p)
	t.Logf("the deletion of %s is deferred (delete pending until its last handle closes)", p)
	return false
}

// requireDeferredDeletionHarmless checks a hold whose lock file's deletion was
// deferred: it keeps its authority (renewals with its term: the name still
// names the file it locked), releases cleanly, and its last handle's close
// completes the deletion.
func requireDeferredDeletionHarmless(t *testing.T, s *Store, h *localHold, term uint64, rel string) {
	t.Helper()
	ev, _ := h.expect(events.Renewed, "")
	require.Equal(t, term, *ev.Term)
	h.sigs <- syscall.SIGTERM
	ev, _ = h.expect(events.Released, hold.ReasonSignal)
	require.Equal(t, term, *ev.Term)
	require.Equal(t, hold.ExitSIGTERM, h.exit())
	_, err := os.Lstat(filepath.Join(s.Dir(), rel))
	require.ErrorIs(t, err, fs.ErrNotExist, "the deferred deletion completed once the hold closed the file")
}

func TestLocalDeletedLockFileIsLost(t *testing.T) {
	s, _ := newLocalStore(t)
	h := startLocalElection(t, s, "del", "agent-a", func(h *request) { h.TTL = renewTTL })
	term, _ := h.authority()
	if !removeLockFile(t, s, filepath.Join("elections", "del.lock")) {
		requireDeferredDeletionHarmless(t, s, h, term, filepath.Join("elections", "del.lock"))
		return
	}
	ev, _ := h.expect(events.Lost, reasonLockGone)
	require.Equal(t, term, *ev.Term)
	require.Equal(t, hold.ExitLost, h.exit())
	require.Contains(t, h.diag.String(), "was deleted")
}

// replaceLockFile renames a new file over a locked lock file and reports
// whether it was replaced. On unix it always is. Windows refuses to replace a
// file another handle has open unless the rename has POSIX semantics
// (lockReplacementMayBeRefused): the refusal must be an access error that
// leaves the locked file in place.
func replaceLockFile(t *testing.T, s *Store, rel string) bool {
	t.Helper()
	lock := filepath.Join(s.Dir(), rel)
	before, err := os.Stat(lock)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lock+".new", nil, 0o600))
	renameErr := os.Rename(lock+".new", lock)
	if renameErr == nil {
		return true
	}
	require.True(t, lockReplacementMayBeRefused, "replacing %s: %v", lock, renameErr)
	require.ErrorIs(t, renameErr, fs.ErrPermission, "replacing %s was refused, but not for access", lock)
	after, err := os.Lstat(lock)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "a refused replacement changed %s", lock)
	require.NoError(t, os.Remove(lock+".new"))
	t.Logf("replacing the locked %s was refused: %v", lock, renameErr)
	return false
}

func TestLocalReplacedLockFileIsLost(t *testing.T) {
	s, _ := newLocalStore(t)
	h := startLocalLock(t, s, "repl", func(h *request) { h.TTL = renewTTL })
	term, _ := h.authority()
	if !replaceLockFile(t, s, filepath.Join("locks", "repl.lock")) {
		// The hold keeps its authority: the name still names its file.
		ev, _ := h.expect(events.Renewed, "")
		require.Equal(t, term, *ev.Term)
		h.sigs <- syscall.SIGTERM
		h.expect(events.Released, hold.ReasonSignal)
		require.Equal(t, hold.ExitSIGTERM, h.exit())
		return
	}
	h.expect(events.Lost, reasonLockGone)
	require.Equal(t, hold.ExitLost, h.exit())
	require.Contains(t, h.diag.String(), "was replaced")
}

func TestLocalForeignHolderRecordIsLost(t *testing.T) {
	s, _ := newLocalStore(t)
	for _, kind := range []hold.Kind{hold.KindElection, hold.KindLock} {
		var h *localHold
		reason := hold.ReasonTermChanged
		if kind == hold.KindLock {
			h, reason = startLocalLock(t, s, "rec", func(h *request) { h.TTL = renewTTL }), hold.ReasonLeaseChanged
		} else {
			h = startLocalElection(t, s, "rec", "agent-a", func(h *request) { h.TTL = renewTTL })
		}
		h.authority()
		p := filepath.Join(s.Dir(), subdir(kind), "rec.holder")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var rec holderRecord
		require.NoError(t, json.Unmarshal(b, &rec))
		rec.Holder = "someone-else"
		b, err = json.Marshal(rec)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		h.expect(events.Lost, reason)
		require.Equal(t, hold.ExitLost, h.exit())
	}
}

// A lock file deleted under a live holder must not give a newcomer
// authority while the old holder still believes it leads: the newcomer waits
// until the old holder has reported the loss and its lease has expired.
// Where the deletion is deferred (Windows without POSIX delete semantics) the
// old holder keeps leading, so the newcomer must go on waiting until the old
// holder releases.
func TestLocalNoOverlapAfterLockFileDeleted(t *testing.T) {
	s, _ := newLocalStore(t)
	a := startLocalElection(t, s, "overlap", "agent-a", func(h *request) { h.TTL = renewTTL })
	termA, _ := a.authority()
	if !removeLockFile(t, s, filepath.Join("elections", "overlap.lock")) {
		b := startLocalElection(t, s, "overlap", "agent-b")
		b.expect(events.Waiting, hold.ReasonFollower)
		ev, _ := a.expect(events.Renewed, "")
		require.Equal(t, termA, *ev.Term)
		b.quiet(5 * testPoll)
		a.sigs <- syscall.SIGTERM
		a.expect(events.Released, hold.ReasonSignal)
		require.Equal(t, hold.ExitSIGTERM, a.exit())
		termB, _ := b.authority()
		require.Greater(t, termB, termA)
		return
	}
	b := startLocalElection(t, s, "overlap", "agent-b")
	b.expect(events.Waiting, hold.ReasonFollower)
	_, lost := a.expect(events.Lost, reasonLockGone)
	require.Equal(t, hold.ExitLost, a.exit())
	lastExpiry, err := time.Parse(time.RFC3339Nano, lost["expires_at"].(string))
	require.NoError(t, err)
	_, m := b.expect(events.Leader, "")
	at, err := time.Parse(time.RFC3339Nano, m["observed_at"].(string))
	require.NoError(t, err)
	require.False(t, at.Before(lastExpiry), "new leader at %v before the old lease expired at %v", at, lastExpiry)
}

func TestLocalSignalWhileWaitingPrintsNothing(t *testing.T) {
	s, _ := newLocalStore(t)
	a := startLocalElection(t, s, "w", "agent-a")
	a.authority()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		b := startLocalElection(t, s, "w", "agent-b")
		b.expect(events.Waiting, hold.ReasonFollower)
		b.sigs <- sig
		want := hold.ExitSIGINT
		if sig == syscall.SIGTERM {
			want = hold.ExitSIGTERM
		}
		require.Equal(t, want, b.exit())
	}
	st, err := s.status(hold.KindElection, "w")
	require.NoError(t, err)
	require.Equal(t, "agent-a", st.Holder.CandidateID, "a waiter's exit leaves the leader alone")
}

func TestLocalAcquireTimeout(t *testing.T) {
	s, _ := newLocalStore(t)
	a := startLocalLock(t, s, "busy")
	a.authority()
	b := startLocalLock(t, s, "busy", func(h *request) { h.AcquireTimeout = durPtr(150 * time.Millisecond) })
	b.expect(events.Waiting, hold.ReasonHeld)
	b.expect(events.Error, hold.ReasonAcquireTimeout)
	require.Equal(t, hold.ExitAcquireTimeout, b.exit())
	c := startLocalElection(t, s, "free", "agent-c", func(h *request) { h.AcquireTimeout = durPtr(0) })
	c.expect(events.Error, hold.ReasonAcquireTimeout)
	require.Equal(t, hold.ExitAcquireTimeout, c.exit())
}

func TestLocalHoldRefusesTraversalName(t *testing.T) {
	s, _ := newLocalStore(t)
	for _, name := range []string{"../../etc/passwd", "..", ""} {
		out, diag := &bytes.Buffer{}, &bytes.Buffer{}
		spec := hold.HoldSpec{Kind: hold.KindLock, Name: name, TTL: time.Minute, Out: out, Diag: diag}
		require.Equal(t, hold.ExitUsage, s.Hold(context.Background(), spec, nil))
		require.Empty(t, out.String())
		require.True(t, strings.HasPrefix(diag.String(), "octostore: "), diag.String())
		require.Equal(t, 1, strings.Count(diag.String(), "\n"))
		w := hold.WatchSpec{Kind: hold.KindElection, Name: name, Out: out, Diag: diag}
		require.Equal(t, hold.ExitUsage, s.Watch(context.Background(), w, nil))
	}
	entries, err := os.ReadDir(filepath.Dir(s.Dir()))
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was created beside the state directory")
}

func TestLocalTermPersistsAndCorruptCounterFails(t *testing.T) {
	s, env := newLocalStore(t)
	h := startLocalElection(t, s, "t", "agent-a")
	t1, _ := h.authority()
	h.sigs <- os.Interrupt
	h.expect(events.Released, hold.ReasonSignal)
	h.exit()
	require.NoError(t, s.Close())

	s2 := openStore(t, env)
	h = startLocalElection(t, s2, "t", "agent-a")
	t2, _ := h.authority()
	require.Equal(t, t1+1, t2)
	h.sigs <- os.Interrupt
	h.expect(events.Released, hold.ReasonSignal)
	h.exit()
	b, err := os.ReadFile(filepath.Join(s2.Dir(), "term"))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%020d\n", t2), string(b))

	require.NoError(t, os.WriteFile(filepath.Join(s2.Dir(), "term"), []byte("7\n"), 0o600))
	h = startLocalElection(t, s2, "t", "agent-a")
	h.expect(events.Error, hold.CodeInternalError)
	require.Equal(t, hold.ExitSoftware, h.exit())
	require.Contains(t, h.diag.String(), "corrupt")
	st, err := s2.status(hold.KindElection, "t")
	require.NoError(t, err)
	require.False(t, st.Held, "a failed acquisition leaves the lock free")
}

func TestLocalCreateStatusWatch(t *testing.T) {
	s, _ := newLocalStore(t)
	id, err := s.createElection()
	require.NoError(t, err)
	require.Len(t, id, 32)
	raw, err := base64.RawURLEncoding.DecodeString(id)
	require.NoError(t, err)
	require.Len(t, raw, 24)
	esc, err := escapeName(id)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(s.Dir(), "elections", esc+".lock"))
	require.NoError(t, err)

	out := make(chanWriter, 100)
	s.poll = 10 * time.Millisecond // the watches'; the holds below poll at testPoll
	w := hold.WatchSpec{Kind: hold.KindElection, Name: id, JSON: true, Out: out}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs, done := make(chan os.Signal, 1), make(chan int, 1)
	go func() { done <- s.Watch(ctx, w, sigs) }()
	snap := func() map[string]any {
		t.Helper()
		select {
		case line := <-out:
			var m map[string]any
			require.NoError(t, json.Unmarshal(line, &m), "%s", line)
			require.Equal(t, "snapshot", m["event"])
			require.Equal(t, "election", m["kind"])
			require.Equal(t, id, m["name"])
			require.Equal(t, "local", m["server"])
			return m["snapshot"].(map[string]any)
		case <-time.After(10 * time.Second):
			t.Fatal("no snapshot")
			return nil
		}
	}
	require.Equal(t, "vacant", snap()["status"])

	h := startLocalElection(t, s, id, "agent-a")
	term, _ := h.authorityPastProbes() // the watch above probes this room every 10 ms
	// The lock is taken a moment before the holder record is written: a
	// snapshot between the two shows a leader with no details yet (slow
	// file renames under Wine make that moment long enough to be seen).
	got := snap()
	for got["status"] == "leader" && got["leader"] == nil {
		got = snap()
	}
	require.Equal(t, "leader", got["status"])
	leader, ok := got["leader"].(map[string]any)
	require.True(t, ok, "no leader details in %v", got)
	require.Equal(t, "agent-a", leader["candidate_id"])
	require.EqualValues(t, term, leader["term"])
	require.EqualValues(t, os.Getpid(), leader["pid"])

	h.sigs <- syscall.SIGTERM
	h.expect(events.Released, hold.ReasonSignal)
	h.exit()
	// Snapshots of the holder's last changes may still be queued ahead of
	// the release's (seen under Wine): the first one that is not the
	// leader's must be vacant.
	got = snap()
	for got["status"] == "leader" {
		got = snap()
	}
	require.Equal(t, "vacant", got["status"])
	sigs <- os.Interrupt
	select {
	case code := <-done:
		require.Equal(t, hold.ExitSIGINT, code)
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop")
	}

	// Human watch of a lock, ended by the context.
	var buf proctest.SyncBuffer
	lw := hold.WatchSpec{Kind: hold.KindLock, Name: "a/b", Out: &buf}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { done <- s.Watch(ctx2, lw, nil) }()
	proctest.WaitFor(t, 10*time.Second, "human snapshot", func() bool { return buf.String() != "" })
	cancel2()
	require.Equal(t, hold.ExitSIGTERM, <-done)
	require.Equal(t, "lock a/b · free · authority local\n", buf.String())
}

// localChild is the test binary re-executed as an election hold.
type localChild struct {
	cmd    *exec.Cmd
	stream *events.Stream
	lines  chan string
	stderr *proctest.SyncBuffer
	waited chan struct{}
}

// startLocalChild runs a child hold on the default store of dir (passed in
// localDirVar). The cleanup kills it (SIGKILL, TerminateProcess) and waits
// for it: the process handle Go keeps (a pidfd on Linux) never names a
// recycled pid.
func startLocalChild(t *testing.T, dir, room, candidate string, poll time.Duration) *localChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), localChildEnv+"=1", localDirVar+"="+dir, localChildRoom+"="+room,
		localChildCandidate+"="+candidate, localChildPoll+"="+poll.String())
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c := &localChild{cmd: cmd, stream: events.NewStream(events.Expect{Kind: events.Election, Name: room, Candidate: candidate}),
		lines: make(chan string, 100), stderr: &proctest.SyncBuffer{}, waited: make(chan struct{})}
	cmd.Stderr = c.stderr
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		_ = cmd.Wait()
		close(c.waited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-c.waited:
		case <-time.After(10 * time.Second):
			t.Errorf("child %d was not reaped", cmd.Process.Pid)
		}
	})
	return c
}

func (c *localChild) expect(t *testing.T, event string) events.Event {
	t.Helper()
	select {
	case line, ok := <-c.lines:
		require.True(t, ok, "child exited early; stderr: %s", c.stderr)
		ev, err := c.stream.Next([]byte(line))
		require.NoError(t, err, "child line %s rejected", line)
		require.Equal(t, event, ev.Event, "child line %s", line)
		require.Equal(t, "local", ev.Server)
		return ev
	case <-time.After(15 * time.Second):
		t.Fatalf("child printed no %s; stderr: %s", event, c.stderr)
		return events.Event{}
	}
}

// exited waits for the child's exit status: once Wait has returned the
// process is gone (on unix not even a zombie).
func (c *localChild) exited(t *testing.T) *os.ProcessState {
	t.Helper()
	select {
	case <-c.waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("child %d did not exit", c.cmd.Process.Pid)
	}
	require.NotNil(t, c.cmd.ProcessState)
	return c.cmd.ProcessState
}

// Issue 10 item 6: a worker running as the holder's user rewinds the fencing
// counter. Every holder copies its term into the name's lock file and every
// live or dead holder's record keeps its term, so a counter below either is
// refused with errTermRewound instead of repeating a term.
func TestLocalRewoundTermRefused(t *testing.T) {
	s, _ := newLocalStore(t)
	termFile := filepath.Join(s.Dir(), "term")
	rewind := func(to uint64) {
		t.Helper()
		require.NoError(t, os.WriteFile(termFile, []byte(fmt.Sprintf("%020d\n", to)), 0o600))
	}

	// After a clean release: the room's lock file remembers its last term.
	h := startLocalElection(t, s, "rw", "agent-a")
	t1, _ := h.authority()
	h.sigs <- os.Interrupt
	h.expect(events.Released, hold.ReasonSignal)
	h.exit()
	rewind(t1 - 1)
	h = startLocalElection(t, s, "rw", "agent-a")
	h.expect(events.Error, hold.CodeInternalError)
	require.Equal(t, hold.ExitSoftware, h.exit())
	require.Contains(t, h.diag.String(), "fencing counter was rewound")
	require.Contains(t, h.diag.String(), filepath.Join("elections", "rw.lock"))

	// While another name is held: its holder record names the higher term.
	rewind(t1)
	held := startLocalLock(t, s, "held")
	t2, _ := held.authority()
	require.Greater(t, t2, t1)
	rewind(t2 - 1)
	h = startLocalElection(t, s, "other", "agent-a")
	h.expect(events.Error, hold.CodeInternalError)
	require.Equal(t, hold.ExitSoftware, h.exit())
	require.Contains(t, h.diag.String(), fmt.Sprintf("term %d was already issued", t2))
	require.Contains(t, h.diag.String(), filepath.Join("locks", "held.holder"))

	// Put right, the counter hands out a term above every recorded one.
	rewind(t2)
	h = startLocalElection(t, s, "other", "agent-a")
	t3, _ := h.authority()
	require.Equal(t, t2+1, t3)
	for _, x := range []*localHold{h, held} {
		x.sigs <- os.Interrupt
		x.expect(events.Released, hold.ReasonSignal)
		x.exit()
	}
}
