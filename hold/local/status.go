package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/platform"
)

// vacant is the status word of an election without a leader, as the server
// words it.
const vacant = "vacant"

// Holder is the current holder as its record describes it.
type Holder struct {
	// CandidateID is empty for locks.
	CandidateID string
	// HolderID is a random id of this acquisition (a public pseudonym).
	HolderID   string
	Term       uint64
	PID        int
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// Status is one reading of kind/name (`election status` / `lock status`):
// the hold.Report that Store.Status returns.
type Status struct {
	Kind hold.Kind
	Name string
	// Server is the authority the human line names (Store.Server).
	Server string
	// Held reports that some process holds the name's lock right now.
	Held bool
	// Holder is the holder's own record; nil when vacant, and also while a
	// new holder has not written its record yet.
	Holder *Holder
	// NextTerm is at least the term the next holder will get (0 if the
	// counter could not be read).
	NextTerm   uint64
	ObservedAt time.Time
}

// Status reports whether kind/name is held and by whom (hold.Authority); the
// Report is a Status. The lock itself is the truth: the name is vacant
// exactly when a shared lock on its file can be taken (and it is dropped at
// once); the record only describes a holder whose lock is held and whose
// process is alive. A name the store refuses is a *hold.UsageError.
func (s *Store) Status(_ context.Context, kind hold.Kind, name string) (hold.Report, error) {
	st, err := s.status(kind, name)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s *Store) status(kind hold.Kind, name string) (Status, error) {
	esc, err := escapeName(name)
	if err != nil {
		return Status{}, err
	}
	p := pathsFor(kind, esc)
	st := Status{Kind: kind, Name: name, Server: s.server, ObservedAt: time.Now()}
	f, err := s.root.Open(p.lock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Status{}, fmt.Errorf("open %s: %w", s.join(p.lock), err)
	default:
		got, lerr := platform.TryLockFile(f, false)
		if got {
			lerr = errors.Join(lerr, platform.UnlockFile(f))
		}
		f.Close()
		if lerr != nil {
			return Status{}, fmt.Errorf("probe %s: %w", s.join(p.lock), lerr)
		}
		st.Held = !got
	}
	if st.Held {
		rec, err := s.readRecord(p.record)
		if err == nil && rec.Kind == kind.String() && rec.Name == name && rec.holderProcess().Alive() {
			h := &Holder{HolderID: rec.Holder, Term: rec.Term, PID: rec.PID, AcquiredAt: rec.AcquiredAt, ExpiresAt: rec.ExpiresAt}
			if rec.CandidateID != nil {
				h.CandidateID = *rec.CandidateID
			}
			st.Holder = h
		}
	}
	if cur, ok := s.peekTerm(); ok && cur < math.MaxUint64 {
		st.NextTerm = cur + 1
	}
	return st, nil
}

func (st Status) retryAfterMS() uint64 {
	if st.Holder == nil {
		return 0
	}
	return uint64(max(st.Holder.ExpiresAt.Sub(st.ObservedAt), 0) / time.Millisecond)
}

func marshalNoHTML(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // only maps, strings and numbers: cannot fail
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

type leaderJSON struct {
	CandidateID string `json:"candidate_id"`
	Term        uint64 `json:"term"`
	ExpiresAt   string `json:"expires_at"`
	PID         int    `json:"pid"`
}

// JSON is the `status --json` body, shaped like the server's
// (docs/protocol.md "Read-only commands") plus the holder's pid. Elections
// (struct order):
// {"election_id","status":"leader"|"vacant","leader"?:{"candidate_id","term","expires_at","pid"},"retry_after_ms"}.
// Locks (alphabetical):
// {"expires_at","fencing_token","holder_id","metadata":null,"name","pid"?,"status":"held"|"free"}.
// A held name whose holder has not described itself yet shows status
// leader/held with no holder details.
func (st Status) JSON() []byte {
	if st.Kind == hold.KindLock {
		return marshalNoHTML(st.snapshot())
	}
	v := struct {
		ElectionID   string      `json:"election_id"`
		Status       string      `json:"status"`
		Leader       *leaderJSON `json:"leader,omitempty"`
		RetryAfterMS uint64      `json:"retry_after_ms"`
	}{ElectionID: st.Name, Status: st.statusWord(), RetryAfterMS: st.retryAfterMS()}
	if h := st.Holder; h != nil {
		v.Leader = &leaderJSON{CandidateID: h.CandidateID, Term: h.Term, ExpiresAt: events.FormatTimestamp(h.ExpiresAt), PID: h.PID}
	}
	return marshalNoHTML(v)
}

func (st Status) statusWord() string {
	switch {
	case st.Kind == hold.KindLock && st.Held:
		return "held"
	case st.Kind == hold.KindLock:
		return "free"
	case st.Held:
		return "leader"
	default:
		return vacant
	}
}

// snapshotJSON is the status object as a watch snapshot carries it
// (docs/protocol.md "Watch"): alphabetical keys, the holder's pid added.
func (st Status) snapshotJSON() []byte { return marshalNoHTML(st.snapshot()) }

// snapshot is the status object with alphabetical keys (encoding/json sorts
// map keys), as watch snapshots carry it (docs/protocol.md "Watch").
func (st Status) snapshot() map[string]any {
	if st.Kind == hold.KindLock {
		m := map[string]any{"name": st.Name, "status": st.statusWord(), "metadata": nil,
			"expires_at": nil, "holder_id": nil, "fencing_token": nil}
		if st.NextTerm > 0 {
			m["fencing_token"] = st.NextTerm
		}
		if h := st.Holder; h != nil {
			m["expires_at"] = events.FormatTimestamp(h.ExpiresAt)
			m["holder_id"] = h.HolderID
			m["fencing_token"] = h.Term
			m["pid"] = h.PID
		}
		return m
	}
	m := map[string]any{"election_id": st.Name, "status": st.statusWord(), "retry_after_ms": st.retryAfterMS()}
	if h := st.Holder; h != nil {
		m["leader"] = map[string]any{"candidate_id": h.CandidateID, "term": h.Term,
			"expires_at": events.FormatTimestamp(h.ExpiresAt), "pid": h.PID}
	}
	return m
}

// Human is the one-line human status (docs/protocol.md "Read-only commands"
// shapes), control characters escaped; see humanLine.
func (st Status) Human() string { return st.humanLine(st.Server) }

// humanLine is the human status naming server:
// "ROOM · leader agent-a · term 12 · pid 4242 · expires … · authority local",
// "ROOM · vacant · authority local",
// "NAME · held · term 42 · pid 4242 · authority local",
// "NAME · free · authority local".
func (st Status) humanLine(server string) string {
	name, srv := hold.TerminalSafe(st.Name), hold.TerminalSafe(server)
	h := st.Holder
	switch {
	case h == nil:
		return fmt.Sprintf("%s · %s · authority %s", name, st.statusWord(), srv)
	case st.Kind == hold.KindLock:
		return fmt.Sprintf("%s · held · term %d · pid %d · authority %s", name, h.Term, h.PID, srv)
	default:
		return fmt.Sprintf("%s · leader %s · term %d · pid %d · expires %s · authority %s", name,
			hold.TerminalSafe(h.CandidateID), h.Term, h.PID, h.ExpiresAt.UTC().Format(time.RFC3339Nano), srv)
	}
}

// Watch is `election watch` / `lock watch` (hold.Authority): it reads the
// status every poll interval and prints a snapshot at start and whenever the
// holder, term, expiry or state changes, until a signal or ctx ends it
// (130/143), as the HTTP watch does. A name the store refuses is 64.
// spec.JSON selects the JSONL envelope of docs/protocol.md "Watch";
// otherwise one human line per snapshot:
// "<kind> <name> · <status> · authority <server>".
func (s *Store) Watch(ctx context.Context, spec hold.WatchSpec, signals <-chan os.Signal) int {
	w := &watch{store: s, spec: spec, poll: s.poll,
		wait: &hold.Waiter{Clock: hold.SystemClock{}, Signals: signals, Ctx: ctx}}
	if w.spec.Out == nil {
		w.spec.Out = io.Discard
	}
	if w.spec.Diag == nil {
		w.spec.Diag = io.Discard
	}
	if w.poll <= 0 {
		w.poll = defaultPoll
	}
	if err := ValidateName(spec.Name); err != nil {
		fmt.Fprintf(w.spec.Diag, "octostore: %v\n", err)
		return hold.ExitUsage
	}
	return w.run()
}

// watch is one run of Store.Watch.
type watch struct {
	store *Store
	spec  hold.WatchSpec
	poll  time.Duration
	wait  *hold.Waiter
	seq   uint64
	last  string // the last snapshot printed, without its countdown
}

func (w *watch) run() int {
	for {
		w.reconcile()
		now, err := hold.Now(w.wait.Clock)
		var next hold.Deadline
		if err == nil {
			next, err = now.After(w.poll)
		}
		if err != nil {
			fmt.Fprintf(w.spec.Diag, "octostore: %v\n", err)
			return hold.ExitSoftware
		}
		o, err := w.wait.Sleep(next, true)
		if err != nil {
			fmt.Fprintf(w.spec.Diag, "octostore: %v\n", err)
			return hold.ExitSoftware
		}
		if o == hold.Signalled {
			if w.wait.Signal == syscall.SIGTERM {
				return hold.ExitSIGTERM
			}
			return hold.ExitSIGINT
		}
	}
}

// reconcile reads the status once and prints it if it changed.
func (w *watch) reconcile() {
	st, err := w.store.status(w.spec.Kind, w.spec.Name)
	if err != nil {
		fmt.Fprintf(w.spec.Diag, "octostore: watch reconcile failed: %v\n", err)
		return
	}
	snap := st.snapshot()
	// retry_after_ms counts down on every poll; it is not a change.
	key := string(marshalNoHTML(withoutKey(snap, "retry_after_ms")))
	if key != w.last {
		w.last = key
		w.seq++
		w.print(st, snap)
	}
}

func withoutKey(m map[string]any, key string) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}

func (w *watch) print(st Status, snap map[string]any) {
	out, server := w.spec.Out, w.store.Server()
	if !w.spec.JSON {
		fmt.Fprintf(out, "%s %s · %s · authority %s\n", w.spec.Kind, hold.TerminalSafe(w.spec.Name), st.statusWord(), hold.TerminalSafe(server))
		return
	}
	line := struct {
		SchemaVersion int             `json:"schema_version"`
		Sequence      uint64          `json:"sequence"`
		Event         string          `json:"event"`
		Kind          string          `json:"kind"`
		Name          string          `json:"name"`
		Server        string          `json:"server"`
		Snapshot      json.RawMessage `json:"snapshot"`
		ObservedAt    string          `json:"observed_at"`
	}{1, w.seq, "snapshot", w.spec.Kind.String(), w.spec.Name, server, marshalNoHTML(snap), events.FormatTimestamp(st.ObservedAt)}
	_, _ = out.Write(append(marshalNoHTML(line), '\n'))
}
