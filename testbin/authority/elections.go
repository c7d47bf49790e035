package main

import (
	"encoding/base64"
	"time"
	"unicode/utf8"

	"github.com/octostore-supervisor/supervisor/events"
	"github.com/octostore-supervisor/supervisor/hold"
)

// Success bodies are structs so encoding/json keeps the server's struct order
// (docs/protocol.md "Elections API"); tag ("status") first where the server's
// enum is tagged.

type leaderView struct {
	CandidateID string  `json:"candidate_id"`
	Term        uint64  `json:"term"`
	ExpiresAt   string  `json:"expires_at"`
	Metadata    *string `json:"metadata,omitempty"`
}

type createElectionBody struct {
	ElectionID   string `json:"election_id"`
	CampaignPath string `json:"campaign_path"`
	StatusPath   string `json:"status_path"`
	WatchPath    string `json:"watch_path"`
}

type leaderBody struct {
	Status       string     `json:"status"`
	ElectionID   string     `json:"election_id"`
	Leader       leaderView `json:"leader"`
	LeaderToken  string     `json:"leader_token"`
	RenewAfterMs int64      `json:"renew_after_ms"`
}

type followerBody struct {
	Status       string     `json:"status"`
	ElectionID   string     `json:"election_id"`
	Leader       leaderView `json:"leader"`
	RetryAfterMs int64      `json:"retry_after_ms"`
}

type electionStatusBody struct {
	ElectionID   string      `json:"election_id"`
	Status       string      `json:"status"`
	Leader       *leaderView `json:"leader,omitempty"`
	RetryAfterMs int64       `json:"retry_after_ms"`
}

type resignBody struct {
	ElectionID   string `json:"election_id"`
	Status       string `json:"status"`
	PreviousTerm uint64 `json:"previous_term"`
}

func validElectionID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}

func validCandidate(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == ':' || b == '@' || b == '-') {
			return false
		}
	}
	return true
}

func (c *call) electionsOn() *apiError {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	if !c.a.electionsEnabled {
		return errForbidden("Public elections are disabled on this server")
	}
	return nil
}

func electionTTL(p *int64) (int64, *apiError) {
	if p == nil {
		return 30, nil
	}
	if *p < 5 || *p > 300 {
		return 0, errInvalidTTL("Public election TTL must be between 5 and 300 seconds")
	}
	return *p, nil
}

// leaderToken is base64url-no-pad(holder UUID ‖ lease UUID), 43 chars
// (docs/protocol.md "Election identifiers").
func leaderToken(l *lease) string {
	b := append(append([]byte{}, l.holderID[:]...), l.leaseID[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeLeaderToken(s string) (holder, leaseID uuid, ok bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 32 {
		return holder, leaseID, false
	}
	copy(holder[:], b[:16])
	copy(leaseID[:], b[16:])
	return holder, leaseID, true
}

// view renders the leader object, applying wrong_candidate/wrong_term.
func (c *call) view(l *lease) leaderView {
	v := leaderView{CandidateID: l.candidate, Term: l.fencing, ExpiresAt: events.FormatTimestamp(l.expiresAt), Metadata: l.metadata}
	if f := c.faults.get(KindWrongCandidate); f != nil {
		v.CandidateID = f.Candidate
		if v.CandidateID == "" {
			v.CandidateID = "intruder"
		}
	}
	if f := c.faults.get(KindWrongTerm); f != nil {
		if f.Term != nil {
			v.Term = *f.Term
		} else {
			v.Term++
		}
	}
	return v
}

func (c *call) electionIDOut(id string) string {
	if c.faults.get(KindWrongElection) != nil {
		return "wrong-election-id"
	}
	return id
}

func (c *call) createElection() *response {
	if e := c.electionsOn(); e != nil {
		return fail(e)
	}
	// The server's ids may begin with '-'; the tests pass ids as arguments,
	// where "--x" reads as a flag (1 in 4096 runs failed), so this fake
	// mints as our own authorities do.
	id, err := hold.NewElectionID()
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux or Windows
	}
	return ok(201, createElectionBody{ElectionID: id, CampaignPath: "/elections/" + id + "/campaign",
		StatusPath: "/elections/" + id, WatchPath: "/elections/" + id + "/watch"})
}

func (c *call) campaign() *response {
	var req struct {
		CandidateID *string `json:"candidate_id"`
		TTLSeconds  *int64  `json:"ttl_seconds"`
		Metadata    *string `json:"metadata"`
	}
	if e := c.decodeJSON(&req); e != nil {
		return fail(e)
	}
	if req.CandidateID == nil || !u32(req.TTLSeconds) {
		return fail(errFramework(422))
	}
	if e := c.electionsOn(); e != nil {
		return fail(e)
	}
	id := c.params[0]
	if !validElectionID(id) {
		return fail(errInvalidInput("Election ID must be 8-64 characters of letters, digits, '-' or '_'"))
	}
	if !validCandidate(*req.CandidateID) {
		return fail(errInvalidInput("Candidate ID must be 1-64 characters of letters, digits, '.', '_', ':', '@' or '-'"))
	}
	if req.Metadata != nil && utf8.RuneCountInString(*req.Metadata) > 1024 {
		return fail(errInvalidInput("Metadata must be at most 1024 characters"))
	}
	ttl, e := electionTTL(req.TTLSeconds)
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	key := electionKey(id)
	if cur := a.leases[key]; cur != nil {
		// Not idempotent: even the leader's own candidate is a new holder.
		return ok(200, followerBody{Status: "follower", ElectionID: c.electionIDOut(id), Leader: c.view(cur),
			RetryAfterMs: c.faults.retryAfter(msUntil(now, cur.expiresAt))})
	}
	l := &lease{name: key, holderID: newUUID(), leaseID: newUUID(), candidate: *req.CandidateID, ttl: ttl,
		expiresAt: now.Add(time.Duration(ttl) * time.Second), metadata: req.Metadata}
	l.holder = "election:" + l.holderID.String()
	l.fencing = a.takeFencing()
	a.leases[key] = l
	a.totalAcquires++
	a.notifyLocked(key, watchEvent{event: "acquired", fencing: l.fencing, expiresAt: l.expiresAt})
	return ok(200, c.leaderBody(id, l))
}

func (c *call) leaderBody(id string, l *lease) leaderBody {
	return leaderBody{Status: "leader", ElectionID: c.electionIDOut(id), Leader: c.view(l), LeaderToken: leaderToken(l),
		RenewAfterMs: c.faults.renewAfter(l.ttl * 500)}
}

func (c *call) electionStatus() *response {
	if e := c.electionsOn(); e != nil {
		return fail(e)
	}
	id := c.params[0]
	if !validElectionID(id) {
		return fail(errInvalidInput("Election ID must be 8-64 characters of letters, digits, '-' or '_'"))
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	return ok(200, c.electionSnapshotLocked(id))
}

func (c *call) electionSnapshotLocked(id string) electionStatusBody {
	now := c.a.now()
	cur := c.a.leases[electionKey(id)]
	if cur == nil || !now.Before(cur.expiresAt) {
		return electionStatusBody{ElectionID: id, Status: "vacant", RetryAfterMs: 0}
	}
	v := c.view(cur)
	return electionStatusBody{ElectionID: id, Status: "leader", Leader: &v, RetryAfterMs: msUntil(now, cur.expiresAt)}
}

// currentElectionLocked finds the lease a leader token names: 404 when the
// room is vacant or expired, 400 when another lease holds it.
func (c *call) currentElectionLocked(id, token string) (*lease, *apiError) {
	holder, leaseID, _ := decodeLeaderToken(token)
	cur := c.a.leases[electionKey(id)]
	if cur == nil || !c.a.now().Before(cur.expiresAt) {
		return nil, errLeaseNotCurrent(404)
	}
	if cur.holderID != holder || cur.leaseID != leaseID {
		return nil, errLeaseNotCurrent(400)
	}
	return cur, nil
}

func (c *call) electionRenew() *response {
	var req struct {
		LeaderToken *string `json:"leader_token"`
		TTLSeconds  *int64  `json:"ttl_seconds"`
	}
	if e := c.decodeJSON(&req); e != nil {
		return fail(e)
	}
	if req.LeaderToken == nil || !u32(req.TTLSeconds) {
		return fail(errFramework(422))
	}
	if e := c.electionsOn(); e != nil {
		return fail(e)
	}
	id := c.params[0]
	if !validElectionID(id) {
		return fail(errInvalidInput("Election ID must be 8-64 characters of letters, digits, '-' or '_'"))
	}
	ttl, e := electionTTL(req.TTLSeconds)
	if e != nil {
		return fail(e)
	}
	if _, _, good := decodeLeaderToken(*req.LeaderToken); !good {
		return fail(errInvalidInput("Invalid leader token"))
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, e := c.currentElectionLocked(id, *req.LeaderToken)
	if e != nil {
		return fail(e)
	}
	// Same term on renew; the expiry may move earlier if the TTL shrank.
	cur.ttl = ttl
	cur.expiresAt = a.now().Add(time.Duration(ttl) * time.Second)
	a.notifyLocked(cur.name, watchEvent{event: "renewed", fencing: cur.fencing, expiresAt: cur.expiresAt})
	return ok(200, c.leaderBody(id, cur))
}

func (c *call) resign() *response {
	var req struct {
		LeaderToken *string `json:"leader_token"`
	}
	if e := c.decodeJSON(&req); e != nil {
		return fail(e)
	}
	if req.LeaderToken == nil {
		return fail(errFramework(422))
	}
	if e := c.electionsOn(); e != nil {
		return fail(e)
	}
	id := c.params[0]
	if !validElectionID(id) {
		return fail(errInvalidInput("Election ID must be 8-64 characters of letters, digits, '-' or '_'"))
	}
	if _, _, good := decodeLeaderToken(*req.LeaderToken); !good {
		return fail(errInvalidInput("Invalid leader token"))
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, e := c.currentElectionLocked(id, *req.LeaderToken)
	if e != nil {
		return fail(e)
	}
	a.freeLocked(cur.name, cur, a.now(), "released")
	a.totalReleases++
	body := resignBody{ElectionID: c.electionIDOut(id), Status: "vacant", PreviousTerm: cur.fencing}
	if f := c.faults.get(KindResignMismatch); f != nil {
		switch f.Field {
		case "status":
			body.Status = "leader"
		case "election_id":
			body.ElectionID = "wrong-election-id"
		default:
			body.PreviousTerm++
		}
	}
	return ok(200, body)
}
