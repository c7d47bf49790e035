package main

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the authority's only source of time for lease state and
// timestamps, so tests can expire leases deterministically.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that only moves when told to.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock starts a manual clock at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Options configure an Authority.
type Options struct {
	Tokens            []string      // accepted bearer tokens
	Clock             Clock         // nil: system clock
	KeepaliveInterval time.Duration // SSE keepalive period; default 15s (docs/protocol.md "Election watch stream", "Lock watch stream")
	WatchMax          time.Duration // SSE stream lifetime; default 900s
}

// lease is one held name. Elections are stored as "__election/<id>" and share
// the fencing counter with locks, exactly like the real store
// (docs/protocol.md "Election identifiers").
type lease struct {
	name      string
	holder    string // internal holder identity
	holderID  uuid   // election holder UUID (first half of the leader token)
	leaseID   uuid
	fencing   uint64
	ttl       int64
	expiresAt time.Time
	metadata  *string
	candidate string // elections only
	session   string // ephemeral locks: owning session ID
	owner     string // bearer token that acquired (locks)
	lockDelay int64
}

// tomb remembers a freed name: its last fencing token (lock status shows it
// while free) and the cooling period of lock_delay_seconds.
type tomb struct {
	fencing   uint64
	coolUntil time.Time
	delay     int64
}

type session struct {
	id        string
	owner     string
	ttl       int64
	expiresAt time.Time
	deleted   bool
	expired   bool // cleanup already released its locks
}

// watchEvent is a store notification; election watchers only use it as a
// trigger to re-read state.
type watchEvent struct {
	event     string // acquired|renewed|released|expired
	fencing   uint64
	expiresAt time.Time
}

type subscriber struct {
	ch chan watchEvent
}

// RequestRecord is one logged API request (control routes are not logged).
type RequestRecord struct {
	Seq     int                 `json:"seq"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Route   string              `json:"route"`
	Status  int                 `json:"status"` // 0 while in flight, or when dropped/stalled
	Faults  []string            `json:"faults"`
	Body    string              `json:"body"`
	Headers map[string][]string `json:"headers"`
}

// Authority is the fake server. It implements http.Handler.
type Authority struct {
	clock  Clock
	offset atomic.Int64 // ns added to clock by Advance
	opts   Options
	start  time.Time
	done   chan struct{}
	closed sync.Once

	mu               sync.Mutex
	tokens           map[string]bool
	nextFencing      uint64
	leases           map[string]*lease
	tombs            map[string]tomb
	sessions         map[string]*session
	subs             map[string]map[*subscriber]struct{}
	faults           []*Fault
	nextFaultID      int
	log              []RequestRecord
	electionsEnabled bool
	totalAcquires    int64
	totalReleases    int64
}

// New builds an Authority.
func New(opts Options) *Authority {
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.KeepaliveInterval <= 0 {
		opts.KeepaliveInterval = 15 * time.Second
	}
	if opts.WatchMax <= 0 {
		opts.WatchMax = 900 * time.Second
	}
	a := &Authority{
		clock:            opts.Clock,
		opts:             opts,
		done:             make(chan struct{}),
		tokens:           map[string]bool{},
		nextFencing:      1,
		leases:           map[string]*lease{},
		tombs:            map[string]tomb{},
		sessions:         map[string]*session{},
		subs:             map[string]map[*subscriber]struct{}{},
		electionsEnabled: true,
	}
	for _, t := range opts.Tokens {
		a.tokens[t] = true
	}
	a.start = a.now()
	return a
}

func (a *Authority) now() time.Time {
	return a.clock.Now().Add(time.Duration(a.offset.Load()))
}

// Now is the authority's current time (clock plus Advance offsets).
func (a *Authority) Now() time.Time { return a.now() }

// Advance moves the authority's time forward by d on top of its clock (works
// with the system clock too, which is what the standalone binary uses), then
// runs expiry cleanup so watchers see expirations.
func (a *Authority) Advance(d time.Duration) {
	a.offset.Add(int64(d))
	a.Sweep()
}

// Close unblocks stalled handlers and ends SSE streams so that
// httptest.Server.Close and http.Server.Shutdown can finish.
func (a *Authority) Close() { a.closed.Do(func() { close(a.done) }) }

// AddToken accepts another bearer token.
func (a *Authority) AddToken(t string) {
	a.mu.Lock()
	a.tokens[t] = true
	a.mu.Unlock()
}

// SetElectionsEnabled switches public elections (disabled → 403 forbidden,
// docs/protocol.md "Elections API").
func (a *Authority) SetElectionsEnabled(on bool) {
	a.mu.Lock()
	a.electionsEnabled = on
	a.mu.Unlock()
}

// Sweep runs the expiry cleanup the real server runs every 5 s: expired
// sessions release their ephemeral locks, expired leases become free and
// watchers are told.
func (a *Authority) Sweep() {
	a.mu.Lock()
	a.sweepLocked()
	a.mu.Unlock()
}

// ErrNotHeld is returned by control operations on a free name.
var ErrNotHeld = errors.New("not held")

// RevokeLeader makes candidate (default "usurper") the leader of election id
// with a fresh holder and a new, larger term, as if the old leader had lost
// the room. It works whether or not the room currently has a leader.
func (a *Authority) RevokeLeader(id, candidate string) uint64 {
	if candidate == "" {
		candidate = "usurper"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	now := a.now()
	ttl := int64(30)
	name := electionKey(id)
	if cur := a.leases[name]; cur != nil {
		ttl = cur.ttl
	}
	l := &lease{name: name, holderID: newUUID(), leaseID: newUUID(), candidate: candidate, ttl: ttl,
		expiresAt: now.Add(time.Duration(ttl) * time.Second)}
	l.holder = "election:" + l.holderID.String()
	l.fencing = a.takeFencing()
	a.leases[name] = l
	a.totalAcquires++
	a.notifyLocked(name, watchEvent{event: "acquired", fencing: l.fencing, expiresAt: l.expiresAt})
	return l.fencing
}

// StealLock gives lock name to a different (anonymous) holder with a new
// fencing token, so the old lease's renew gets 400 lease_not_current.
func (a *Authority) StealLock(name string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	now := a.now()
	ttl := int64(60)
	if cur := a.leases[name]; cur != nil {
		ttl = cur.ttl
	}
	l := &lease{name: name, holder: "thief:" + newUUID().String(), leaseID: newUUID(), ttl: ttl,
		expiresAt: now.Add(time.Duration(ttl) * time.Second)}
	l.fencing = a.takeFencing()
	a.leases[name] = l
	a.totalAcquires++
	a.notifyLocked(name, watchEvent{event: "acquired", fencing: l.fencing, expiresAt: l.expiresAt})
	return l.fencing
}

// ExpireLock ends lock name's lease now (as if its TTL had passed).
func (a *Authority) ExpireLock(name string) error { return a.expire(name) }

// ExpireElection ends election id's leadership now.
func (a *Authority) ExpireElection(id string) error { return a.expire(electionKey(id)) }

func (a *Authority) expire(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	l := a.leases[name]
	if l == nil {
		return ErrNotHeld
	}
	l.expiresAt = a.now()
	a.sweepLocked()
	return nil
}

// ExpireSession ends session id now and releases its ephemeral locks.
func (a *Authority) ExpireSession(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s == nil || s.deleted {
		return ErrNotHeld
	}
	s.expiresAt = a.now()
	a.sweepLocked()
	return nil
}

// Requests returns a copy of the request log, optionally only one route.
func (a *Authority) Requests(route string) []RequestRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []RequestRecord{}
	for _, r := range a.log {
		if route == "" || r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// CountRequests is len(Requests(route)).
func (a *Authority) CountRequests(route string) int { return len(a.Requests(route)) }

// ResetRequests clears the request log.
func (a *Authority) ResetRequests() {
	a.mu.Lock()
	a.log = nil
	a.mu.Unlock()
}

func electionKey(id string) string { return "__election/" + id }

func (a *Authority) takeFencing() uint64 {
	f := a.nextFencing
	a.nextFencing++
	return f
}

// sweepLocked removes expired leases and sessions. Callers hold a.mu.
func (a *Authority) sweepLocked() {
	now := a.now()
	for _, s := range a.sessions {
		if !s.deleted && !s.expired && !now.Before(s.expiresAt) {
			s.expired = true
			a.releaseSessionLocksLocked(s.id, "released")
		}
	}
	for name, l := range a.leases {
		if !now.Before(l.expiresAt) {
			a.freeLocked(name, l, l.expiresAt, "expired")
		}
	}
}

func (a *Authority) freeLocked(name string, l *lease, at time.Time, event string) {
	delete(a.leases, name)
	a.tombs[name] = tomb{fencing: l.fencing, coolUntil: at.Add(time.Duration(l.lockDelay) * time.Second), delay: l.lockDelay}
	a.notifyLocked(name, watchEvent{event: event})
}

func (a *Authority) releaseSessionLocksLocked(sid, event string) {
	now := a.now()
	for name, l := range a.leases {
		if l.session == sid {
			a.freeLocked(name, l, now, event)
		}
	}
}

func (a *Authority) subscribe(name string) *subscriber {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &subscriber{ch: make(chan watchEvent, 100)}
	if a.subs[name] == nil {
		a.subs[name] = map[*subscriber]struct{}{}
	}
	a.subs[name][s] = struct{}{}
	return s
}

func (a *Authority) unsubscribe(name string, s *subscriber) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.subs[name][s]; ok {
		delete(a.subs[name], s)
		close(s.ch)
	}
}

// notifyLocked fans an event out; a watcher whose 100-event buffer is full is
// dropped (its stream ends), like the server's broadcast lag handling.
func (a *Authority) notifyLocked(name string, ev watchEvent) {
	for s := range a.subs[name] {
		select {
		case s.ch <- ev:
		default:
			delete(a.subs[name], s)
			close(s.ch)
		}
	}
}
