package main

import (
	"fmt"
	"strings"
)

// Fault kinds. Delivery kinds change how (or whether) a response is sent;
// body kinds change fields of an otherwise correct success body.
const (
	// Delivery.
	KindStallHeaders = "stall_headers" // process, then never send headers (until client gives up or Close)
	KindStallBody    = "stall_body"    // send headers + Content-Length + first byte "{", then stall
	KindDelay        = "delay"         // process, wait delay_ms, then answer normally
	KindDrop         = "drop"          // close the connection without any response
	KindError        = "error"         // answer status/code/retry guidance instead; no effect on state
	KindOversized    = "oversized"     // pad the body with spaces to size_bytes (default 1 MiB + 1)
	// Body fields.
	KindWrongCandidate = "wrong_candidate" // leader.candidate_id = candidate (default "intruder")
	KindWrongTerm      = "wrong_term"      // leader.term = term (default real term + 1)
	KindWrongElection  = "wrong_election"  // election_id = "wrong-election-id" in leader/follower/resign bodies
	KindResignMismatch = "resign_mismatch" // field: previous_term (default, +1) | status ("leader") | election_id
	KindWrongSession   = "wrong_session_id"
	KindWrongLease     = "wrong_lease_id" // lock renew / acquire lease_id replaced by another UUID
	KindTiming         = "timing"         // override renew_after_ms / retry_after_ms / keepalive_interval_secs
	KindReflectToken   = "reflect_token"  // bearer token put into metadata/holder_id and error details/request_id
	KindReleaseBody    = "release_body"   // release answers body (default "{}") instead of null
	KindSSE            = "sse"            // watch streams: sse_retry_ms, sse_close_after, sse_frame_bytes
)

// Fault is one injected misbehaviour. JSON field names are the HTTP control
// API's; zero values mean "default".
type Fault struct {
	ID int `json:"id"`
	// Route limits the fault to routes by name, comma-separated; empty = all
	// API routes. Names: create_election, campaign, election_status,
	// election_renew, resign, election_watch, acquire, lock_renew, release,
	// lock_status, lock_watch, create_session, keepalive, delete_session,
	// get_session, health, status.
	Route string `json:"route,omitempty"`
	Kind  string `json:"kind"`
	// Count is how many matching requests the fault applies to (0 = until
	// cleared); Skip lets that many matching requests through first.
	Count int `json:"count,omitempty"`
	Skip  int `json:"skip,omitempty"`
	// NoEffect makes stall_headers/stall_body/delay/drop/oversized skip the
	// state change too (default: the request takes effect and only the
	// answer is lost or late, the worst case for a client).
	NoEffect bool `json:"no_effect,omitempty"`

	DelayMs int64 `json:"delay_ms,omitempty"`
	// error kind
	Status           int    `json:"status,omitempty"` // default 503
	Code             string `json:"code,omitempty"`   // default from status
	Details          string `json:"details,omitempty"`
	RetryAfterMs     *int64 `json:"retry_after_ms,omitempty"`     // also a timing override for follower/held/delayed
	RetryAfterHeader string `json:"retry_after_header,omitempty"` // default derived from retry_after_ms
	Body             string `json:"body,omitempty"`               // raw body replacing the error JSON / release null
	// body field kinds
	Candidate     string  `json:"candidate,omitempty"`
	Term          *uint64 `json:"term,omitempty"`
	Field         string  `json:"field,omitempty"`
	SessionID     string  `json:"session_id,omitempty"`
	RenewAfterMs  *int64  `json:"renew_after_ms,omitempty"`
	KeepaliveSecs *int64  `json:"keepalive_interval_secs,omitempty"`
	// oversized
	SizeBytes int  `json:"size_bytes,omitempty"`
	Chunked   bool `json:"chunked,omitempty"` // no Content-Length, streamed in chunks
	// sse
	SSERetryMs    *int64 `json:"sse_retry_ms,omitempty"`
	SSECloseAfter int    `json:"sse_close_after,omitempty"` // end stream after N data frames
	SSEFrameBytes int    `json:"sse_frame_bytes,omitempty"` // first frame is a data frame this large

	Used    int `json:"used"`
	skipped int
}

var knownKinds = map[string]bool{
	KindStallHeaders: true, KindStallBody: true, KindDelay: true, KindDrop: true, KindError: true,
	KindOversized: true, KindWrongCandidate: true, KindWrongTerm: true, KindWrongElection: true,
	KindResignMismatch: true, KindWrongSession: true, KindWrongLease: true, KindTiming: true,
	KindReflectToken: true, KindReleaseBody: true, KindSSE: true,
}

var routeNames = map[string]bool{
	"create_election": true, "campaign": true, "election_status": true, "election_renew": true,
	"resign": true, "election_watch": true, "acquire": true, "lock_renew": true, "release": true,
	"lock_status": true, "lock_watch": true, "create_session": true, "keepalive": true,
	"delete_session": true, "get_session": true, "health": true, "status": true,
}

// AddFault installs f and returns its ID. Unknown kinds or route names are
// refused so a typo in a test cannot silently disable a fault.
func (a *Authority) AddFault(f Fault) (int, error) {
	if !knownKinds[f.Kind] {
		return 0, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if f.Route != "" {
		for _, r := range strings.Split(f.Route, ",") {
			if !routeNames[strings.TrimSpace(r)] {
				return 0, fmt.Errorf("unknown route %q", r)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextFaultID++
	f.ID = a.nextFaultID
	f.Used, f.skipped = 0, 0
	a.faults = append(a.faults, &f)
	return f.ID, nil
}

// MustAddFault is AddFault for tests with a known-good fault.
func (a *Authority) MustAddFault(f Fault) int {
	id, err := a.AddFault(f)
	if err != nil {
		panic(err)
	}
	return id
}

// ClearFaults removes every fault.
func (a *Authority) ClearFaults() {
	a.mu.Lock()
	a.faults = nil
	a.mu.Unlock()
}

// Faults lists the active faults.
func (a *Authority) Faults() []Fault {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []Fault{}
	for _, f := range a.faults {
		out = append(out, *f)
	}
	return out
}

func routeMatches(spec, route string) bool {
	if spec == "" {
		return true
	}
	for _, r := range strings.Split(spec, ",") {
		if strings.TrimSpace(r) == route {
			return true
		}
	}
	return false
}

// takeFaults consumes one use of every fault matching route; exhausted faults
// are removed. Callers hold a.mu.
func (a *Authority) takeFaultsLocked(route string) faultSet {
	var out faultSet
	kept := a.faults[:0]
	for _, f := range a.faults {
		if routeMatches(f.Route, route) {
			if f.skipped < f.Skip {
				f.skipped++
			} else {
				f.Used++
				out = append(out, *f)
				if f.Count > 0 && f.Used >= f.Count {
					continue
				}
			}
		}
		kept = append(kept, f)
	}
	a.faults = kept
	return out
}

type faultSet []Fault

func (fs faultSet) get(kind string) *Fault {
	for i := range fs {
		if fs[i].Kind == kind {
			return &fs[i]
		}
	}
	return nil
}

// delivery is the first delivery-changing fault, if any.
func (fs faultSet) delivery() *Fault {
	for i := range fs {
		switch fs[i].Kind {
		case KindStallHeaders, KindStallBody, KindDelay, KindDrop, KindOversized:
			return &fs[i]
		}
	}
	return nil
}

func (fs faultSet) kinds() []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

// renewAfter applies a timing override.
func (fs faultSet) renewAfter(v int64) int64 {
	if f := fs.get(KindTiming); f != nil && f.RenewAfterMs != nil {
		return *f.RenewAfterMs
	}
	return v
}

func (fs faultSet) retryAfter(v int64) int64 {
	if f := fs.get(KindTiming); f != nil && f.RetryAfterMs != nil {
		return *f.RetryAfterMs
	}
	return v
}
