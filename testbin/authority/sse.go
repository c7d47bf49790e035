package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

type electionWatchData struct {
	SchemaVersion int         `json:"schema_version"`
	ElectionID    string      `json:"election_id"`
	Status        string      `json:"status"`
	Leader        *leaderView `json:"leader"` // JSON null when vacant: no skip on this struct (docs/protocol.md "Election watch stream")
	RetryAfterMs  int64       `json:"retry_after_ms"`
	ObservedAt    string      `json:"observed_at"`
}

type lockEventData struct {
	Event        string  `json:"event"`
	LockName     string  `json:"lock_name"`
	FencingToken *uint64 `json:"fencing_token,omitempty"`
	ExpiresAt    *string `json:"expires_at,omitempty"`
	ObservedAt   string  `json:"observed_at"`
}

// serveWatch validates like the real handlers, then streams. Delivery
// faults act before the stream starts (d is nil when none or already spent).
func (c *call) serveWatch(d *Fault) (int, bool) {
	var key string
	var e *apiError
	election := c.route == "election_watch"
	if election {
		if e = c.electionsOn(); e == nil && !validElectionID(c.params[0]) {
			e = errInvalidInput("Election ID must be 8-64 characters of letters, digits, '-' or '_'")
		}
		key = electionKey(c.params[0])
	} else {
		key, e = c.lockPrelude()
	}
	if e != nil {
		return c.deliver(fail(e), d)
	}
	if d != nil {
		switch d.Kind {
		case KindDrop:
			return 0, c.drop()
		case KindStallHeaders:
			c.stall()
			return 0, true
		case KindDelay:
			if !c.sleep(d.DelayMs) {
				return 0, true
			}
		}
	}
	sub := c.a.subscribe(key)
	defer c.a.unsubscribe(key, sub)

	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(200)
	rc := http.NewResponseController(c.w)
	_ = rc.Flush()
	if d != nil && d.Kind == KindStallBody {
		c.stall()
		return 200, true
	}
	write := func(s string) bool {
		if _, err := c.w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}

	sf := c.faults.get(KindSSE)
	retry := int64(1000)
	closeAfter, frameBytes := 0, 0
	retryLine := ""
	if sf != nil {
		if sf.SSERetryMs != nil {
			retry = *sf.SSERetryMs
			retryLine = fmt.Sprintf("retry:%d\n", retry)
		}
		closeAfter, frameBytes = sf.SSECloseAfter, sf.SSEFrameBytes
	}
	if frameBytes > 0 && !write("data: "+strings.Repeat("x", frameBytes)+"\n\n") {
		return 200, false
	}
	frames := 0
	send := func(ev *watchEvent) bool {
		var frame string
		if election {
			frame = fmt.Sprintf("event: state\nretry:%d\ndata: %s\n\n", retry, c.electionWatchJSON())
		} else {
			frame = retryLine + "data: " + string(c.lockEventJSON(key, ev)) + "\n\n"
		}
		frames++
		return write(frame)
	}
	// Subscribed first, then the snapshot, so nothing falls in between.
	if !send(nil) {
		return 200, false
	}
	keep := time.NewTicker(c.a.opts.KeepaliveInterval)
	defer keep.Stop()
	maxT := time.NewTimer(c.a.opts.WatchMax)
	defer maxT.Stop()
	keepFrame := ":\n\n" // axum's default keep-alive comment on the lock stream
	if election {
		keepFrame = ": keepalive\n\n"
	}
	for {
		if closeAfter > 0 && frames >= closeAfter {
			return 200, false
		}
		select {
		case <-c.r.Context().Done():
			return 200, false
		case <-c.a.done:
			return 200, false
		case <-maxT.C:
			return 200, false
		case <-keep.C:
			if !write(keepFrame) {
				return 200, false
			}
		case ev, open := <-sub.ch:
			if !open {
				return 200, false // lagged: the real server closes the stream too
			}
			if !send(&ev) {
				return 200, false
			}
		}
	}
}

func (c *call) electionWatchJSON() []byte {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	st := c.electionSnapshotLocked(c.params[0])
	return marshal(electionWatchData{SchemaVersion: 1, ElectionID: st.ElectionID, Status: st.Status, Leader: st.Leader,
		RetryAfterMs: st.RetryAfterMs, ObservedAt: events.FormatTimestamp(c.a.now())})
}

// lockEventJSON renders ev, or for the first frame (ev nil) the current
// state: acquired when held, else released.
func (c *call) lockEventJSON(name string, ev *watchEvent) []byte {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	if ev == nil {
		ev = &watchEvent{event: "released"}
		if cur := c.a.leases[name]; cur != nil {
			ev = &watchEvent{event: "acquired", fencing: cur.fencing, expiresAt: cur.expiresAt}
		}
	}
	out := lockEventData{Event: ev.event, LockName: name, ObservedAt: events.FormatTimestamp(c.a.now())}
	if ev.event == "acquired" || ev.event == "renewed" {
		f, exp := ev.fencing, events.FormatTimestamp(ev.expiresAt)
		out.FencingToken, out.ExpiresAt = &f, &exp
	}
	return marshal(out)
}
