package main

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/octostore-supervisor/supervisor/events"
)

type acquiredBody struct {
	Status       string  `json:"status"`
	LeaseID      string  `json:"lease_id"`
	FencingToken uint64  `json:"fencing_token"`
	ExpiresAt    string  `json:"expires_at"`
	RenewAfterMs int64   `json:"renew_after_ms"`
	Metadata     *string `json:"metadata"`
}

type heldBody struct {
	Status       string  `json:"status"`
	HolderID     string  `json:"holder_id"`
	ExpiresAt    string  `json:"expires_at"`
	RetryAfterMs int64   `json:"retry_after_ms"`
	Metadata     *string `json:"metadata"`
}

type delayedBody struct {
	Status           string `json:"status"`
	AvailableAt      string `json:"available_at"`
	LockDelaySeconds int64  `json:"lock_delay_seconds"`
	RetryAfterMs     int64  `json:"retry_after_ms"`
}

type lockRenewBody struct {
	LeaseID      string `json:"lease_id"`
	ExpiresAt    string `json:"expires_at"`
	RenewAfterMs int64  `json:"renew_after_ms"`
}

type lockStatusBody struct {
	Name         string  `json:"name"`
	Status       string  `json:"status"`
	HolderID     *string `json:"holder_id"`
	FencingToken uint64  `json:"fencing_token"`
	ExpiresAt    *string `json:"expires_at"`
	Metadata     *string `json:"metadata"`
}

type sessionCreateBody struct {
	SessionID             string `json:"session_id"`
	ExpiresAt             string `json:"expires_at"`
	KeepaliveIntervalSecs int64  `json:"keepalive_interval_secs"`
}

type keepaliveBody struct {
	SessionID string `json:"session_id"`
	ExpiresAt string `json:"expires_at"`
}

type sessionGetBody struct {
	SessionID string `json:"session_id"`
	UserID    string `json:"user_id"`
	ExpiresAt string `json:"expires_at"`
	LockCount int    `json:"lock_count"`
	Active    bool   `json:"active"`
}

// checkLockName approximates the server's rule
// (docs/protocol.md "Lock names and leases") with unicode.IsLetter ||
// unicode.IsNumber standing in for Rust's char::is_alphanumeric.
func checkLockName(name string) *apiError {
	if len(name) < 1 || len(name) > 256 {
		return errInvalidLockName("Lock name must be 1-256 bytes")
	}
	if strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return errInvalidLockName("Lock name must not start or end with '/' or contain '//'")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return errInvalidLockName("Lock name must not contain '..' segments")
		}
		if len(seg) > 64 {
			return errInvalidLockName("Lock name segments must be at most 64 bytes")
		}
	}
	for _, r := range name {
		if !(unicode.IsLetter(r) || unicode.IsNumber(r) || r == '-' || r == '_' || r == '.' || r == '/') {
			return errInvalidLockName("Lock name may only contain alphanumeric characters, '-', '_', '.' and '/'")
		}
	}
	return nil
}

// lockPrelude is auth → name → reserved-prefix, the common order of
// docs/protocol.md "Acquire" to "Lock watch stream".
func (c *call) lockPrelude() (string, *apiError) {
	if e := c.auth(); e != nil {
		return "", e
	}
	name := c.params[0]
	if e := checkLockName(name); e != nil {
		return "", e
	}
	if strings.HasPrefix(name, "__election/") {
		return "", errForbidden("Lock names starting with __election/ are reserved")
	}
	return name, nil
}

func lockTTL(p *int64) (int64, *apiError) {
	if p == nil {
		return 60, nil
	}
	if *p < 1 || *p > 3600 {
		return 0, errInvalidTTL("TTL must be between 1 and 3600 seconds")
	}
	return *p, nil
}

// ownSessionLocked is the caller's live session sid, or nil when it is
// unknown, deleted or another token's (all answered 404).
func (c *call) ownSessionLocked(sid string) *session {
	s := c.a.sessions[sid]
	if s == nil || s.deleted || s.owner != c.token {
		return nil
	}
	return s
}

// sessionUsableLocked: 404 when unknown, deleted or foreign; 410 when expired.
func (c *call) sessionUsableLocked(sid string) *apiError {
	s := c.ownSessionLocked(sid)
	if s == nil {
		return errNotFound("Session not found")
	}
	if s.expired || !c.a.now().Before(s.expiresAt) {
		return errSessionExpired()
	}
	return nil
}

func (c *call) metaOut(m *string) *string {
	if c.faults.get(KindReflectToken) != nil && c.token != "" {
		t := c.token
		return &t
	}
	return m
}

func (c *call) holderOut(l *lease) string {
	if c.faults.get(KindReflectToken) != nil && c.token != "" {
		return c.token
	}
	return pseudonym("holder", l.holder)
}

func (c *call) leaseOut(id uuid) string {
	if c.faults.get(KindWrongLease) != nil {
		return newUUID().String()
	}
	return id.String()
}

func (c *call) acquire() *response {
	var req struct {
		TTLSeconds       *int64  `json:"ttl_seconds"`
		Metadata         *string `json:"metadata"`
		SessionID        *string `json:"session_id"`
		Ephemeral        *bool   `json:"ephemeral"`
		LockDelaySeconds *int64  `json:"lock_delay_seconds"`
	}
	if e := c.decodeJSON(&req); e != nil {
		return fail(e)
	}
	if !u32(req.TTLSeconds) || !u32(req.LockDelaySeconds) {
		return fail(errFramework(422))
	}
	sid := ""
	if req.SessionID != nil {
		u, good := parseUUID(*req.SessionID)
		if !good {
			return fail(errFramework(422))
		}
		sid = u.String()
	}
	name, e := c.lockPrelude()
	if e != nil {
		return fail(e)
	}
	ttl, e := lockTTL(req.TTLSeconds)
	if e != nil {
		return fail(e)
	}
	if req.Metadata != nil && utf8.RuneCountInString(*req.Metadata) > 1024 {
		return fail(errInvalidInput("Metadata must be at most 1024 characters"))
	}
	var delay int64
	if req.LockDelaySeconds != nil {
		if *req.LockDelaySeconds > 30 {
			return fail(errInvalidInput("lock_delay_seconds must be between 0 and 30"))
		}
		delay = *req.LockDelaySeconds
	}
	ephemeral := req.Ephemeral != nil && *req.Ephemeral
	if ephemeral && sid == "" {
		return fail(errInvalidInput("Ephemeral locks require a session_id"))
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	cur := a.leases[name]
	if cur == nil {
		if t, had := a.tombs[name]; had && now.Before(t.coolUntil) {
			return ok(409, delayedBody{Status: "delayed", AvailableAt: events.FormatTimestamp(t.coolUntil), LockDelaySeconds: t.delay,
				RetryAfterMs: c.faults.retryAfter(msUntil(now, t.coolUntil))})
		}
	}
	if sid != "" {
		if e := c.sessionUsableLocked(sid); e != nil {
			return fail(e)
		}
	}
	// Ephemeral locks are held by the session, so two sessions of one bearer
	// token contend as distinct owners (docs/protocol.md "Acquire").
	holder := "user:" + c.token
	if ephemeral {
		holder = "session:" + sid
	}
	if cur != nil {
		if cur.holder != holder {
			return ok(200, heldBody{Status: "held", HolderID: c.holderOut(cur), ExpiresAt: events.FormatTimestamp(cur.expiresAt),
				RetryAfterMs: c.faults.retryAfter(msUntil(now, cur.expiresAt)), Metadata: c.metaOut(cur.metadata)})
		}
		if exp := now.Add(time.Duration(ttl) * time.Second); exp.After(cur.expiresAt) {
			cur.expiresAt = exp
		}
		a.notifyLocked(name, watchEvent{event: "renewed", fencing: cur.fencing, expiresAt: cur.expiresAt})
		return ok(200, c.acquiredBody(cur, now))
	}
	l := &lease{name: name, holder: holder, leaseID: newUUID(), ttl: ttl, expiresAt: now.Add(time.Duration(ttl) * time.Second),
		metadata: req.Metadata, owner: c.token, lockDelay: delay}
	if ephemeral {
		l.session = sid
	}
	l.fencing = a.takeFencing()
	a.leases[name] = l
	delete(a.tombs, name)
	a.totalAcquires++
	a.notifyLocked(name, watchEvent{event: "acquired", fencing: l.fencing, expiresAt: l.expiresAt})
	return ok(200, c.acquiredBody(l, now))
}

func (c *call) acquiredBody(l *lease, now time.Time) acquiredBody {
	return acquiredBody{Status: "acquired", LeaseID: c.leaseOut(l.leaseID), FencingToken: l.fencing,
		ExpiresAt: events.FormatTimestamp(l.expiresAt), RenewAfterMs: c.faults.renewAfter(l.expiresAt.Sub(now).Milliseconds() / 2),
		Metadata: c.metaOut(l.metadata)}
}

// currentLockLocked resolves a lease_id against name: 404 when free, session
// checks for ephemeral locks, 400 when another lease holds it.
func (c *call) currentLockLocked(name, leaseID string) (*lease, *apiError) {
	cur := c.a.leases[name]
	if cur == nil || !c.a.now().Before(cur.expiresAt) {
		return nil, errLeaseNotCurrent(404)
	}
	if cur.session != "" {
		if e := c.sessionUsableLocked(cur.session); e != nil {
			return nil, e
		}
	}
	if cur.leaseID.String() != leaseID {
		return nil, errLeaseNotCurrent(400)
	}
	return cur, nil
}

func (c *call) decodeLease(withTTL bool) (string, *int64, *apiError) {
	var req struct {
		LeaseID    *string `json:"lease_id"`
		TTLSeconds *int64  `json:"ttl_seconds"`
	}
	if e := c.decodeJSON(&req); e != nil {
		return "", nil, e
	}
	if req.LeaseID == nil || !u32(req.TTLSeconds) {
		return "", nil, errFramework(422)
	}
	u, good := parseUUID(*req.LeaseID)
	if !good {
		return "", nil, errFramework(422)
	}
	if !withTTL {
		req.TTLSeconds = nil
	}
	return u.String(), req.TTLSeconds, nil
}

func (c *call) lockRenew() *response {
	leaseID, ttlp, e := c.decodeLease(true)
	if e != nil {
		return fail(e)
	}
	name, e := c.lockPrelude()
	if e != nil {
		return fail(e)
	}
	ttl, e := lockTTL(ttlp)
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, e := c.currentLockLocked(name, leaseID)
	if e != nil {
		return fail(e)
	}
	now := a.now()
	cur.ttl = ttl
	cur.expiresAt = now.Add(time.Duration(ttl) * time.Second)
	a.notifyLocked(name, watchEvent{event: "renewed", fencing: cur.fencing, expiresAt: cur.expiresAt})
	return ok(200, lockRenewBody{LeaseID: c.leaseOut(cur.leaseID), ExpiresAt: events.FormatTimestamp(cur.expiresAt),
		RenewAfterMs: c.faults.renewAfter(cur.expiresAt.Sub(now).Milliseconds() / 2)})
}

func (c *call) release() *response {
	leaseID, _, e := c.decodeLease(false)
	if e != nil {
		return fail(e)
	}
	name, e := c.lockPrelude()
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, e := c.currentLockLocked(name, leaseID)
	if e != nil {
		return fail(e)
	}
	a.freeLocked(name, cur, a.now(), "released")
	a.totalReleases++
	if f := c.faults.get(KindReleaseBody); f != nil {
		b := f.Body
		if b == "" {
			b = "{}"
		}
		return &response{status: 200, body: []byte(b)}
	}
	// The 4 bytes `null`: the CLI only counts a release as confirmed on it.
	return &response{status: 200, body: []byte("null")}
}

func (c *call) lockStatus() *response {
	name, e := c.lockPrelude()
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.leases[name]; cur != nil {
		h, exp := c.holderOut(cur), events.FormatTimestamp(cur.expiresAt)
		return ok(200, lockStatusBody{Name: name, Status: "held", HolderID: &h, FencingToken: cur.fencing, ExpiresAt: &exp,
			Metadata: c.metaOut(cur.metadata)})
	}
	// Free: the last holder's token, or for a never-held name the counter's next value.
	fencing := a.nextFencing
	if t, had := a.tombs[name]; had {
		fencing = t.fencing
	}
	return ok(200, lockStatusBody{Name: name, Status: "free", FencingToken: fencing, Metadata: c.metaOut(nil)})
}

func (c *call) sessionPath() (string, *apiError) {
	u, good := parseUUID(c.params[0])
	if !good {
		return "", errFramework(400)
	}
	if e := c.auth(); e != nil {
		return "", e
	}
	return u.String(), nil
}

func (c *call) createSession() *response {
	var req struct {
		TTLSeconds *int64 `json:"ttl_seconds"`
	}
	if e := c.decodeJSON(&req); e != nil {
		return fail(e)
	}
	if !u32(req.TTLSeconds) {
		return fail(errFramework(422))
	}
	if e := c.auth(); e != nil {
		return fail(e)
	}
	ttl := int64(60)
	if req.TTLSeconds != nil {
		ttl = min(max(*req.TTLSeconds, 10), 300) // clamped, never rejected
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &session{id: newUUID().String(), owner: c.token, ttl: ttl, expiresAt: a.now().Add(time.Duration(ttl) * time.Second)}
	a.sessions[s.id] = s
	interval := ttl / 2
	if f := c.faults.get(KindTiming); f != nil && f.KeepaliveSecs != nil {
		interval = *f.KeepaliveSecs
	}
	return ok(201, sessionCreateBody{SessionID: s.id, ExpiresAt: events.FormatTimestamp(s.expiresAt), KeepaliveIntervalSecs: interval})
}

func (c *call) keepalive() *response {
	sid, e := c.sessionPath()
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := c.sessionUsableLocked(sid); e != nil {
		return fail(e)
	}
	s := a.sessions[sid]
	s.expiresAt = a.now().Add(time.Duration(s.ttl) * time.Second)
	out := sid
	if f := c.faults.get(KindWrongSession); f != nil {
		out = f.SessionID
		if out == "" {
			out = newUUID().String()
		}
	}
	return ok(200, keepaliveBody{SessionID: out, ExpiresAt: events.FormatTimestamp(s.expiresAt)})
}

func (c *call) deleteSession() *response {
	sid, e := c.sessionPath()
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	s := c.ownSessionLocked(sid)
	if s == nil {
		return fail(errNotFound("Session not found"))
	}
	s.deleted = true
	a.releaseSessionLocksLocked(sid, "released")
	return &response{status: 204}
}

func (c *call) getSession() *response {
	sid, e := c.sessionPath()
	if e != nil {
		return fail(e)
	}
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	s := c.ownSessionLocked(sid)
	if s == nil {
		return fail(errNotFound("Session not found"))
	}
	n := 0
	for _, l := range a.leases {
		if l.session == sid {
			n++
		}
	}
	return ok(200, sessionGetBody{SessionID: sid, UserID: pseudonym("user", s.owner), ExpiresAt: events.FormatTimestamp(s.expiresAt),
		LockCount: n, Active: !s.expired && a.now().Before(s.expiresAt)})
}
