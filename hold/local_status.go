package hold

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
	"github.com/octostore-supervisor/supervisor/platform"
)

// LocalHolder is the current holder as its record describes it.
type LocalHolder struct {
	// CandidateID is empty for locks.
	CandidateID string
	// HolderID is a random id of this acquisition (a public pseudonym).
	HolderID   string
	Term       uint64
	PID        int
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// LocalStatus is `election status` / `lock status` against a local store.
type LocalStatus struct {
	Kind Kind
	Name string
	// Held reports that some process holds the name's lock right now.
	Held bool
	// Holder is the holder's own record; nil when vacant, and also while a
	// new holder has not written its record yet.
	Holder *LocalHolder
	// NextTerm is at least the term the next holder will get (0 if the
	// counter could not be read).
	NextTerm   uint64
	ObservedAt time.Time
}

// Status reports whether kind/name is held and by whom. The lock itself is
// the truth: the name is vacant exactly when a shared lock on its file can be
// taken (and it is dropped at once); the record only describes a holder whose
// lock is held and whose process is alive.
func (s *LocalStore) Status(kind Kind, name string) (LocalStatus, error) {
	esc, err := escapeLocalName(name)
	if err != nil {
		return LocalStatus{}, err
	}
	p := pathsFor(kind, esc)
	st := LocalStatus{Kind: kind, Name: name, ObservedAt: time.Now()}
	f, err := s.root.Open(p.lock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return LocalStatus{}, fmt.Errorf("open %s: %w", s.join(p.lock), err)
	default:
		got, lerr := platform.TryLockFile(f, false)
		if got {
			lerr = errors.Join(lerr, platform.UnlockFile(f))
		}
		f.Close()
		if lerr != nil {
			return LocalStatus{}, fmt.Errorf("probe %s: %w", s.join(p.lock), lerr)
		}
		st.Held = !got
	}
	if st.Held {
		rec, err := s.readRecord(p.record)
		if err == nil && rec.Kind == kind.String() && rec.Name == name && rec.holderProcess().Alive() {
			h := &LocalHolder{HolderID: rec.Holder, Term: rec.Term, PID: rec.PID, AcquiredAt: rec.AcquiredAt, ExpiresAt: rec.ExpiresAt}
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

func (st LocalStatus) retryAfterMS() uint64 {
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

type localLeaderJSON struct {
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
func (st LocalStatus) JSON() []byte {
	if st.Kind == KindLock {
		return marshalNoHTML(st.snapshot())
	}
	v := struct {
		ElectionID   string           `json:"election_id"`
		Status       string           `json:"status"`
		Leader       *localLeaderJSON `json:"leader,omitempty"`
		RetryAfterMS uint64           `json:"retry_after_ms"`
	}{ElectionID: st.Name, Status: st.statusWord(), RetryAfterMS: st.retryAfterMS()}
	if h := st.Holder; h != nil {
		v.Leader = &localLeaderJSON{CandidateID: h.CandidateID, Term: h.Term, ExpiresAt: events.FormatTimestamp(h.ExpiresAt), PID: h.PID}
	}
	return marshalNoHTML(v)
}

func (st LocalStatus) statusWord() string {
	switch {
	case st.Kind == KindLock && st.Held:
		return "held"
	case st.Kind == KindLock:
		return "free"
	case st.Held:
		return "leader"
	default:
		return electionVacant
	}
}

// Snapshot is the status object as a watch snapshot carries it
// (docs/protocol.md "Watch"): alphabetical keys, the holder's pid added.
func (st LocalStatus) Snapshot() []byte { return marshalNoHTML(st.snapshot()) }

// snapshot is the status object with alphabetical keys (encoding/json sorts
// map keys), as watch snapshots carry it (docs/protocol.md "Watch").
func (st LocalStatus) snapshot() map[string]any {
	if st.Kind == KindLock {
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
// shapes), control characters escaped:
// "ROOM · leader agent-a · term 12 · pid 4242 · expires … · authority local",
// "ROOM · vacant · authority local",
// "NAME · held · term 42 · pid 4242 · authority local",
// "NAME · free · authority local".
func (st LocalStatus) Human(server string) string {
	name, srv := TerminalSafe(st.Name), TerminalSafe(server)
	h := st.Holder
	switch {
	case h == nil:
		return fmt.Sprintf("%s · %s · authority %s", name, st.statusWord(), srv)
	case st.Kind == KindLock:
		return fmt.Sprintf("%s · held · term %d · pid %d · authority %s", name, h.Term, h.PID, srv)
	default:
		return fmt.Sprintf("%s · leader %s · term %d · pid %d · expires %s · authority %s", name,
			TerminalSafe(h.CandidateID), h.Term, h.PID, h.ExpiresAt.UTC().Format(time.RFC3339Nano), srv)
	}
}

// LocalWatch is `election watch` / `lock watch` against a local store: it
// polls Status every PollInterval and prints a snapshot at start and
// whenever the holder, term, expiry or state changes. It ends only on a
// signal (130/143), as the HTTP watch does.
type LocalWatch struct {
	Store *LocalStore
	Kind  Kind
	Name  string
	// JSON selects the JSONL envelope of docs/protocol.md "Watch"; otherwise one
	// human line per snapshot: "<kind> <name> · <status> · authority <server>".
	JSON         bool
	PollInterval time.Duration
	Out, Diag    io.Writer
}

// Run watches until a signal or ctx ends it; it returns 64 for a name the
// local authority refuses, else 130/143.
func (w *LocalWatch) Run(ctx context.Context, signals <-chan os.Signal) int {
	diag := w.Diag
	if diag == nil {
		diag = io.Discard
	}
	out := w.Out
	if out == nil {
		out = io.Discard
	}
	poll := w.PollInterval
	if poll <= 0 {
		poll = DefaultLocalPollInterval
	}
	if err := ValidateLocalName(w.Name); err != nil {
		fmt.Fprintf(diag, "octostore: %v\n", err)
		return ExitUsage
	}
	var seq uint64
	last := ""
	for {
		st, err := w.Store.Status(w.Kind, w.Name)
		if err != nil {
			fmt.Fprintf(diag, "octostore: watch reconcile failed: %v\n", err)
		} else {
			snap := st.snapshot()
			// retry_after_ms counts down on every poll; it is not a change.
			key := string(marshalNoHTML(withoutKey(snap, "retry_after_ms")))
			if key != last {
				last = key
				seq++
				w.print(out, seq, st, snap)
			}
		}
		t := time.NewTimer(poll)
		select {
		case s := <-signals:
			t.Stop()
			if s == syscall.SIGTERM {
				return ExitSIGTERM
			}
			return ExitSIGINT
		case <-ctx.Done():
			t.Stop()
			return ExitSIGTERM
		case <-t.C:
		}
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

func (w *LocalWatch) print(out io.Writer, seq uint64, st LocalStatus, snap map[string]any) {
	if !w.JSON {
		fmt.Fprintf(out, "%s %s · %s · authority %s\n", w.Kind, TerminalSafe(w.Name), st.statusWord(), TerminalSafe(w.Store.Server()))
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
	}{1, seq, "snapshot", w.Kind.String(), w.Name, w.Store.Server(), marshalNoHTML(snap), events.FormatTimestamp(st.ObservedAt)}
	_, _ = out.Write(append(marshalNoHTML(line), '\n'))
}
