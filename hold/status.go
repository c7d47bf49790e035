package hold

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// This file holds the read-only requests (election create, election status,
// lock status; docs/protocol.md "Create room", "Election status",
// "Lock status"), their strict decoding
// (docs/protocol.md "Response handling" step 4) and the three JSON renderings
// the CLI prints (docs/protocol.md "Read-only commands"): the struct-order
// objects of `election create --json` and `election status --json`, and the
// alphabetical, token-redacted objects of `lock status --json` and of every
// watch snapshot.

// ElectionCreated is a decoded 201 from POST /elections
// (docs/protocol.md "Create room").
type ElectionCreated struct {
	ElectionID   string
	CampaignPath string
	StatusPath   string
	WatchPath    string
}

// decodeElectionCreated decodes a room creation success strictly: all four
// fields are required strings.
func decodeElectionCreated(body []byte) (ElectionCreated, error) {
	var w struct {
		ElectionID   *string `json:"election_id"`
		CampaignPath *string `json:"campaign_path"`
		StatusPath   *string `json:"status_path"`
		WatchPath    *string `json:"watch_path"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return ElectionCreated{}, err
	}
	if err := need(has("election_id", w.ElectionID), has("campaign_path", w.CampaignPath),
		has("status_path", w.StatusPath), has("watch_path", w.WatchPath)); err != nil {
		return ElectionCreated{}, err
	}
	return ElectionCreated{ElectionID: *w.ElectionID, CampaignPath: *w.CampaignPath,
		StatusPath: *w.StatusPath, WatchPath: *w.WatchPath}, nil
}

// JSON is `election create --json` (docs/protocol.md "Read-only commands"): the
// body re-serialized in struct order, without a trailing newline.
func (e ElectionCreated) JSON() []byte {
	var w jsonWriter
	w.raw(`{"election_id":`)
	w.str(e.ElectionID)
	w.raw(`,"campaign_path":`)
	w.str(e.CampaignPath)
	w.raw(`,"status_path":`)
	w.str(e.StatusPath)
	w.raw(`,"watch_path":`)
	w.str(e.WatchPath)
	w.raw(`}`)
	return w.bytes()
}

// createElection sends POST /elections (no body) and accepts 201 only
// (docs/protocol.md "Read-only commands"). Every error is a *Failure.
func createElection(ctx context.Context, c *Client) (ElectionCreated, error) {
	var out ElectionCreated
	_, err := c.call(ctx, request{Method: http.MethodPost, Path: "/elections", Accepted: []int{http.StatusCreated}},
		func(b []byte) (err error) { out, err = decodeElectionCreated(b); return err })
	return out, err
}

// StatusLeader is the leader object of an election status
// (docs/protocol.md "Election status"). Metadata is nil when the server sent
// none or null.
type StatusLeader struct {
	CandidateID string
	Metadata    *string
	Term        uint64
	ExpiresAt   time.Time
}

// ElectionStatus is a decoded 200 from GET /elections/{id}
// (docs/protocol.md "Election status"). Leader is nil when the body has no
// leader (or a null one), whatever Status says.
type ElectionStatus struct {
	ElectionID   string
	Status       string
	Leader       *StatusLeader
	RetryAfterMS uint64
}

// decodeElectionStatus decodes an election status strictly, as upstream's
// serde type does: election_id, status and retry_after_ms are required, and a
// present leader needs candidate_id, term and expires_at.
func decodeElectionStatus(body []byte) (ElectionStatus, error) {
	var w struct {
		ElectionID *string `json:"election_id"`
		Status     *string `json:"status"`
		Leader     *struct {
			CandidateID *string    `json:"candidate_id"`
			Metadata    *string    `json:"metadata"`
			Term        *uint64    `json:"term"`
			ExpiresAt   *time.Time `json:"expires_at"`
		} `json:"leader"`
		RetryAfterMS *uint64 `json:"retry_after_ms"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return ElectionStatus{}, err
	}
	if err := need(has("election_id", w.ElectionID), has("status", w.Status),
		has("retry_after_ms", w.RetryAfterMS)); err != nil {
		return ElectionStatus{}, err
	}
	s := ElectionStatus{ElectionID: *w.ElectionID, Status: *w.Status, RetryAfterMS: *w.RetryAfterMS}
	if l := w.Leader; l != nil {
		if err := need(has("candidate_id", l.CandidateID), has("term", l.Term),
			has("expires_at", l.ExpiresAt)); err != nil {
			return ElectionStatus{}, err
		}
		s.Leader = &StatusLeader{CandidateID: *l.CandidateID, Metadata: l.Metadata, Term: *l.Term, ExpiresAt: *l.ExpiresAt}
	}
	return s, nil
}

// JSON is `election status --json` (docs/protocol.md "Read-only commands"):
// struct order, leader omitted when vacant, leader.metadata omitted when absent
// (it sits between candidate_id and term, where upstream's struct declares it).
func (s ElectionStatus) JSON() []byte {
	var w jsonWriter
	w.raw(`{"election_id":`)
	w.str(s.ElectionID)
	w.raw(`,"status":`)
	w.str(s.Status)
	if l := s.Leader; l != nil {
		w.raw(`,"leader":{"candidate_id":`)
		w.str(l.CandidateID)
		if l.Metadata != nil {
			w.raw(`,"metadata":`)
			w.str(*l.Metadata)
		}
		w.raw(`,"term":` + strconv.FormatUint(l.Term, 10))
		w.raw(`,"expires_at":`)
		w.str(events.FormatTimestamp(l.ExpiresAt))
		w.raw(`}`)
	}
	w.raw(`,"retry_after_ms":` + strconv.FormatUint(s.RetryAfterMS, 10) + `}`)
	return w.bytes()
}

// Snapshot is the same status as a watch snapshot (docs/protocol.md "Watch"):
// it went through a generic JSON value upstream, so every object has
// alphabetical keys.
func (s ElectionStatus) Snapshot() []byte {
	var w jsonWriter
	w.raw(`{"election_id":`)
	w.str(s.ElectionID)
	if l := s.Leader; l != nil {
		w.raw(`,"leader":{"candidate_id":`)
		w.str(l.CandidateID)
		w.raw(`,"expires_at":`)
		w.str(events.FormatTimestamp(l.ExpiresAt))
		if l.Metadata != nil {
			w.raw(`,"metadata":`)
			w.str(*l.Metadata)
		}
		w.raw(`,"term":` + strconv.FormatUint(l.Term, 10) + `}`)
	}
	w.raw(`,"retry_after_ms":` + strconv.FormatUint(s.RetryAfterMS, 10))
	w.raw(`,"status":`)
	w.str(s.Status)
	w.raw(`}`)
	return w.bytes()
}

// getElectionStatus sends GET /elections/{id} and accepts 200 only. Every
// error is a *Failure.
func getElectionStatus(ctx context.Context, c *Client, electionID string) (ElectionStatus, error) {
	var out ElectionStatus
	_, err := c.call(ctx, request{Method: http.MethodGet, Path: "/elections/" + EncodeSegment(electionID), Accepted: []int{http.StatusOK}},
		func(b []byte) (err error) { out, err = decodeElectionStatus(b); return err })
	return out, err
}

// LockStatus is a decoded 200 from GET /locks/{name}
// (docs/protocol.md "Lock status"). Optional fields are nil when absent or
// null. ACL is kept as the generic JSON value the server sent (nil when absent
// or null), since the CLI only re-prints it.
type LockStatus struct {
	Name         string
	Status       string
	HolderID     *string
	FencingToken uint64
	ExpiresAt    *time.Time
	Metadata     *string
	ACL          any
}

// decodeLockStatus decodes a lock status strictly: name, status and
// fencing_token are required.
func decodeLockStatus(body []byte) (LockStatus, error) {
	var w struct {
		Name         *string         `json:"name"`
		Status       *string         `json:"status"`
		HolderID     *string         `json:"holder_id"`
		FencingToken *uint64         `json:"fencing_token"`
		ExpiresAt    *time.Time      `json:"expires_at"`
		Metadata     *string         `json:"metadata"`
		ACL          json.RawMessage `json:"acl"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return LockStatus{}, err
	}
	if err := need(has("name", w.Name), has("status", w.Status),
		has("fencing_token", w.FencingToken)); err != nil {
		return LockStatus{}, err
	}
	s := LockStatus{Name: *w.Name, Status: *w.Status, HolderID: w.HolderID, FencingToken: *w.FencingToken,
		ExpiresAt: w.ExpiresAt, Metadata: w.Metadata}
	if len(w.ACL) > 0 && string(w.ACL) != "null" {
		// UseNumber keeps integers exact when they are printed again.
		d := json.NewDecoder(bytes.NewReader(w.ACL))
		d.UseNumber()
		if err := d.Decode(&s.ACL); err != nil {
			return LockStatus{}, err
		}
	}
	return s, nil
}

// JSON is `lock status --json` and a lock watch snapshot
// (docs/protocol.md "Read-only commands", "Watch"): alphabetical keys, absent
// optional values as null (acl omitted), and every string value — not key —
// with secret (the bearer token) replaced by "[REDACTED]", because a server may
// reflect the caller's token into any field.
func (s LockStatus) JSON(secret string) []byte {
	var w jsonWriter
	optStr := func(p *string) {
		if p == nil {
			w.raw("null")
			return
		}
		w.str(Redact(*p, secret))
	}
	w.raw(`{`)
	if s.ACL != nil {
		w.raw(`"acl":`)
		w.value(redactValue(s.ACL, secret))
		w.raw(`,`)
	}
	w.raw(`"expires_at":`)
	if s.ExpiresAt == nil {
		w.raw("null")
	} else {
		w.str(Redact(events.FormatTimestamp(*s.ExpiresAt), secret))
	}
	w.raw(`,"fencing_token":` + strconv.FormatUint(s.FencingToken, 10))
	w.raw(`,"holder_id":`)
	optStr(s.HolderID)
	w.raw(`,"metadata":`)
	optStr(s.Metadata)
	w.raw(`,"name":`)
	w.str(Redact(s.Name, secret))
	w.raw(`,"status":`)
	w.str(Redact(s.Status, secret))
	w.raw(`}`)
	return w.bytes()
}

// getLockStatus sends GET /locks/{name} with the bearer token and accepts 200
// only. Every error is a *Failure; its text may still contain the token, so
// callers print DiagnosticRedacting(token).
func getLockStatus(ctx context.Context, c *Client, name, token string) (LockStatus, error) {
	var out LockStatus
	_, err := c.call(ctx, request{Method: http.MethodGet, Path: "/locks/" + EncodeSegment(name), Bearer: token, Accepted: []int{http.StatusOK}},
		func(b []byte) (err error) { out, err = decodeLockStatus(b); return err })
	return out, err
}

// redactValue returns a copy of a generic JSON value with secret redacted
// from every string (map keys are left alone, as upstream does).
func redactValue(v any, secret string) any {
	switch t := v.(type) {
	case string:
		return Redact(t, secret)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redactValue(e, secret)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = redactValue(e, secret)
		}
		return out
	}
	return v
}

// TerminalSafe escapes Unicode control characters (category Cc) the way Rust's
// char::escape_default does (\t, \r, \n, otherwise \u{1b}), as the upstream CLI
// does to every server-supplied string it prints for a human
// (docs/protocol.md "Human lines"), so a hostile name or status cannot forge
// lines on a terminal.
func TerminalSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// RFC3339Offset is chrono's to_rfc3339(): the AutoSi fraction of
// events.FormatTimestamp but with "+00:00" instead of "Z". Upstream's human
// `election status` line uses it (docs/protocol.md "Timestamps",
// "Read-only commands").
func RFC3339Offset(t time.Time) string {
	return strings.TrimSuffix(events.FormatTimestamp(t), "Z") + "+00:00"
}

// jsonWriter builds compact JSON the way serde_json writes it.
type jsonWriter struct {
	out bytes.Buffer
}

func (w *jsonWriter) raw(s string) { w.out.WriteString(s) }

func (w *jsonWriter) bytes() []byte { return w.out.Bytes() }

// str writes a JSON string. Go's encoder with HTML escaping off matches
// serde_json except that it escapes U+2028/U+2029, which serde_json writes
// raw; those two are written raw here as well.
func (w *jsonWriter) str(s string) {
	var scratch bytes.Buffer
	enc := json.NewEncoder(&scratch)
	enc.SetEscapeHTML(false)
	// Encoding a string cannot fail: invalid UTF-8 becomes U+FFFD.
	_ = enc.Encode(s)
	b := bytes.TrimSuffix(scratch.Bytes(), []byte("\n"))
	// Walk escapes pairwise so an escaped backslash followed by the text
	// "u2028" is left alone.
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			w.out.WriteByte(b[i])
			continue
		}
		switch string(b[i:min(i+6, len(b))]) {
		case `\u2028`:
			w.out.WriteString("\u2028")
			i += 5
		case `\u2029`:
			w.out.WriteString("\u2029")
			i += 5
		default:
			w.out.Write(b[i : i+2])
			i++
		}
	}
}

// value writes a generic JSON value (from a UseNumber decode) with object
// keys in byte order, as serde_json's BTreeMap-backed Value prints them.
func (w *jsonWriter) value(v any) {
	switch t := v.(type) {
	case nil:
		w.raw("null")
	case bool:
		w.raw(strconv.FormatBool(t))
	case json.Number:
		w.raw(t.String())
	case string:
		w.str(t)
	case []any:
		w.raw("[")
		for i, e := range t {
			if i > 0 {
				w.raw(",")
			}
			w.value(e)
		}
		w.raw("]")
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.raw("{")
		for i, k := range keys {
			if i > 0 {
				w.raw(",")
			}
			w.str(k)
			w.raw(":")
			w.value(t[k])
		}
		w.raw("}")
	default:
		// Only the types a json decode produces reach here.
		w.raw("null")
	}
}
