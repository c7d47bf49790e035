package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiError is the server error body (docs/protocol.md "Error body"). It is
// rendered from a map so the keys come out alphabetical, as serde_json's json!
// macro produces them.
type apiError struct {
	status       int
	code         string
	error        string
	details      string
	retryAfterMs *int64
	requestID    string // overrides the real request ID (reflect_token)
	rawBody      string // fault-supplied body replacing the JSON
	retryHeader  string
}

const frameworkDetails = "The request could not be parsed or is not supported by this endpoint"

func errInvalidInput(reason string) *apiError {
	return &apiError{status: 400, code: "invalid_input", error: "Invalid input", details: "Invalid input: " + reason}
}

// errFramework is what the middleware makes of extractor/router rejections:
// invalid_input with the original status kept (docs/protocol.md "Error body").
func errFramework(status int) *apiError {
	return &apiError{status: status, code: "invalid_input", error: "Invalid input", details: frameworkDetails}
}

func errInvalidTTL(reason string) *apiError {
	return &apiError{status: 400, code: "invalid_ttl", error: "Invalid TTL", details: "Invalid TTL: " + reason}
}

func errInvalidLockName(reason string) *apiError {
	return &apiError{status: 400, code: "invalid_lock_name", error: "Invalid lock name", details: "Invalid lock name: " + reason}
}

func errForbidden(reason string) *apiError {
	return &apiError{status: 403, code: "forbidden", error: "Forbidden", details: "Forbidden: " + reason}
}

func errNotFound(what string) *apiError {
	return &apiError{status: 404, code: "not_found", error: what, details: what}
}

// errLeaseNotCurrent splits by status exactly as
// docs/protocol.md "Election renew", "Lock renew": 400 when another lease holds
// the name, 404 when nothing current holds it.
func errLeaseNotCurrent(status int) *apiError {
	d := "Lease is not current"
	if status == 400 {
		d = "Invalid lease ID"
	}
	return &apiError{status: status, code: "lease_not_current", error: "Lease is not current", details: d}
}

func errSessionExpired() *apiError {
	return &apiError{status: 410, code: "session_expired", error: "Session expired", details: "Session expired"}
}

var (
	errAuthRequired = &apiError{status: 401, code: "authentication_required", error: "Authorization header required", details: "Bearer token required"}
	errAuthFailed   = &apiError{status: 401, code: "authentication_failed", error: "Authentication failed", details: "Authentication failed"}
)

// response is what a handler produces; delivery (and faults) decide how it
// reaches the wire.
type response struct {
	status int
	body   []byte // nil with status 204
	err    *apiError
}

func ok(status int, v any) *response { return &response{status: status, body: marshal(v)} }

func fail(e *apiError) *response {
	cp := *e
	return &response{status: e.status, err: &cp}
}

// call is one API request in flight.
type call struct {
	a      *Authority
	w      http.ResponseWriter
	r      *http.Request
	route  string
	params []string
	body   []byte
	faults faultSet
	reqID  string
	token  string
}

// route maps method + escaped path to a route name and decoded path
// parameters. status is 404 for an unknown path and 405 for a known path
// with the wrong method, like axum's router.
func route(method, escaped string) (name string, params []string, status int) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			return "", nil, 400
		}
		segs[i] = u
	}
	want := func(m, n string, p ...string) (string, []string, int) {
		for _, x := range p {
			if x == "" {
				return "", nil, 404
			}
		}
		if method != m {
			return "", nil, 405
		}
		return n, p, 0
	}
	switch {
	case len(segs) == 1 && segs[0] == "health":
		return want("GET", "health")
	case len(segs) == 1 && segs[0] == "status":
		return want("GET", "status")
	case len(segs) == 1 && segs[0] == "elections":
		return want("POST", "create_election")
	case len(segs) == 1 && segs[0] == "sessions":
		return want("POST", "create_session")
	case len(segs) == 2 && segs[0] == "elections":
		return want("GET", "election_status", segs[1])
	case len(segs) == 2 && segs[0] == "locks":
		return want("GET", "lock_status", segs[1])
	case len(segs) == 2 && segs[0] == "sessions":
		if method == "DELETE" {
			return want("DELETE", "delete_session", segs[1])
		}
		return want("GET", "get_session", segs[1])
	case len(segs) == 3 && segs[0] == "elections":
		switch segs[2] {
		case "campaign", "renew", "resign":
			n := segs[2]
			if n == "renew" {
				n = "election_renew"
			}
			return want("POST", n, segs[1])
		case "watch":
			return want("GET", "election_watch", segs[1])
		}
	case len(segs) == 3 && segs[0] == "locks":
		switch segs[2] {
		case "acquire", "renew", "release":
			n := segs[2]
			if n == "renew" {
				n = "lock_renew"
			}
			return want("POST", n, segs[1])
		case "watch":
			return want("GET", "lock_watch", segs[1])
		}
	case len(segs) == 3 && segs[0] == "sessions" && segs[2] == "keepalive":
		return want("POST", "keepalive", segs[1])
	}
	return "", nil, 404
}

// ServeHTTP serves the API and the /__control/ endpoint.
func (a *Authority) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	w.Header().Set("x-request-id", reqID)
	if strings.HasPrefix(r.URL.Path, "/__control/") {
		a.serveControl(w, r)
		return
	}
	// The whole body is read up front so that a stalled handler notices the
	// client hanging up (net/http only watches the connection once the body
	// is consumed).
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	name, params, rstatus := route(r.Method, r.URL.EscapedPath())

	a.mu.Lock()
	var fs faultSet
	if rstatus == 0 {
		fs = a.takeFaultsLocked(name)
	}
	seq := 1
	if n := len(a.log); n > 0 {
		seq = a.log[n-1].Seq + 1
	}
	a.log = append(a.log, RequestRecord{Seq: seq, Method: r.Method, Path: r.URL.EscapedPath(), Route: name,
		Faults: fs.kinds(), Body: string(body), Headers: r.Header.Clone()})
	a.sweepLocked()
	a.mu.Unlock()

	c := &call{a: a, w: w, r: r, route: name, params: params, body: body, faults: fs, reqID: reqID}
	status, abort := c.handle(rstatus)

	a.mu.Lock()
	for i := len(a.log) - 1; i >= 0; i-- {
		if a.log[i].Seq == seq {
			a.log[i].Status = status
			break
		}
	}
	a.mu.Unlock()
	if abort {
		// Ends the connection without completing a response.
		panic(http.ErrAbortHandler)
	}
}

func (c *call) handle(rstatus int) (int, bool) {
	if rstatus == 404 {
		return c.deliver(fail(&apiError{status: 404, code: "not_found", error: "Resource not found", details: "Resource not found"}), nil)
	}
	if rstatus != 0 {
		return c.deliver(fail(errFramework(rstatus)), nil)
	}
	if f := c.faults.get(KindError); f != nil {
		return c.deliver(faultError(f), nil)
	}
	d := c.faults.delivery()
	if d != nil && d.NoEffect {
		switch d.Kind {
		case KindDrop, KindStallHeaders, KindStallBody, KindOversized:
			return c.deliver(&response{status: 200, body: []byte("{}")}, d)
		case KindDelay:
			if !c.sleep(d.DelayMs) {
				return 0, true
			}
			d = nil
		}
	}
	if c.route == "election_watch" || c.route == "lock_watch" {
		return c.serveWatch(d)
	}
	var resp *response
	switch c.route {
	case "health":
		resp = ok(200, map[string]any{"db_size_bytes": 4096, "status": "ok", "storage": "wal"})
	case "status":
		resp = c.a.statusBody()
	case "create_election":
		resp = c.createElection()
	case "campaign":
		resp = c.campaign()
	case "election_status":
		resp = c.electionStatus()
	case "election_renew":
		resp = c.electionRenew()
	case "resign":
		resp = c.resign()
	case "acquire":
		resp = c.acquire()
	case "lock_renew":
		resp = c.lockRenew()
	case "release":
		resp = c.release()
	case "lock_status":
		resp = c.lockStatus()
	case "create_session":
		resp = c.createSession()
	case "keepalive":
		resp = c.keepalive()
	case "delete_session":
		resp = c.deleteSession()
	case "get_session":
		resp = c.getSession()
	}
	return c.deliver(resp, d)
}

var defaultCodes = map[int][3]string{
	400: {"invalid_input", "Invalid input", "Invalid input: injected fault"},
	401: {"authentication_failed", "Authentication failed", "Authentication failed"},
	403: {"forbidden", "Forbidden", "Forbidden: injected fault"},
	404: {"not_found", "Resource not found", "Resource not found"},
	409: {"capacity_exceeded", "Capacity exceeded", "Capacity exceeded: injected fault"},
	410: {"session_expired", "Session expired", "Session expired"},
	429: {"rate_limited", "Rate limit exceeded", ""},
	500: {"internal_error", "Internal server error", "Internal server error"},
	502: {"upstream_unavailable", "Upstream service unavailable", "Upstream service unavailable"},
}

// faultError builds the error answer of an "error" fault; with no
// parameters it is a 503 internal_error.
func faultError(f *Fault) *response {
	status := f.Status
	if status == 0 {
		status = 503
	}
	e := &apiError{status: status, code: f.Code, details: f.Details, retryAfterMs: f.RetryAfterMs,
		rawBody: f.Body, retryHeader: f.RetryAfterHeader}
	def, known := defaultCodes[status]
	if !known && status >= 500 {
		def = defaultCodes[500]
	}
	if e.code == "" {
		e.code = def[0]
		if e.code == "" {
			e.code = "internal_error"
		}
	}
	e.error = def[1]
	if e.error == "" {
		e.error = "Injected fault"
	}
	if (e.code == "rate_limited" || e.code == "capacity_exceeded") && e.retryAfterMs == nil {
		v := int64(1000)
		e.retryAfterMs = &v
	}
	if e.details == "" {
		e.details = def[2]
		if e.code == "rate_limited" {
			e.details = fmt.Sprintf("Rate limit exceeded; retry in %d seconds", retrySecs(e.retryAfterMs))
		}
		if e.details == "" {
			e.details = e.error
		}
	}
	return &response{status: status, err: e}
}

func retrySecs(ms *int64) int64 {
	if ms == nil || *ms <= 0 {
		return 0
	}
	return (*ms + 999) / 1000
}

// render turns a response into status, headers and body bytes.
func (c *call) render(resp *response) (int, []byte) {
	h := c.w.Header()
	if resp.err == nil {
		if resp.body != nil {
			h.Set("Content-Type", "application/json")
		}
		return resp.status, resp.body
	}
	e := resp.err
	if c.faults.get(KindReflectToken) != nil {
		// Taken from the header, not c.token, so it works before auth too
		// (an error storm never reaches the auth check).
		if tok, found := strings.CutPrefix(c.r.Header.Get("Authorization"), "Bearer "); found && tok != "" {
			e.details += " " + tok
			e.requestID = tok
		}
	}
	h.Set("Content-Type", "application/json")
	if e.retryHeader != "" {
		h.Set("Retry-After", e.retryHeader)
	} else if e.retryAfterMs != nil && *e.retryAfterMs > 0 {
		h.Set("Retry-After", fmt.Sprint(retrySecs(e.retryAfterMs)))
	}
	if e.rawBody != "" {
		return e.status, []byte(e.rawBody)
	}
	m := map[string]any{"code": e.code, "details": e.details, "error": e.error, "request_id": c.reqID}
	if e.requestID != "" {
		m["request_id"] = e.requestID
	}
	if e.retryAfterMs != nil {
		m["retry_after_ms"] = *e.retryAfterMs
	}
	return e.status, marshal(m)
}

// deliver writes resp, applying the delivery fault d. It returns the status
// logged and whether the connection must be aborted.
func (c *call) deliver(resp *response, d *Fault) (int, bool) {
	status, body := c.render(resp)
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
		case KindStallBody:
			c.w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			c.w.WriteHeader(status)
			if len(body) > 0 {
				_, _ = c.w.Write(body[:1])
			}
			_ = http.NewResponseController(c.w).Flush()
			c.stall()
			return 0, true
		case KindOversized:
			size := d.SizeBytes
			if size <= 0 {
				size = 1<<20 + 1
			}
			if len(body) < size {
				body = append(body, bytes.Repeat([]byte(" "), size-len(body))...)
			}
			if d.Chunked {
				c.w.WriteHeader(status)
				rc := http.NewResponseController(c.w)
				for len(body) > 0 {
					n := min(len(body), 32<<10)
					if _, err := c.w.Write(body[:n]); err != nil {
						return status, false
					}
					_ = rc.Flush()
					body = body[n:]
				}
				return status, false
			}
		}
	}
	if body != nil {
		c.w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	}
	c.w.WriteHeader(status)
	if body != nil {
		_, _ = c.w.Write(body)
	}
	return status, false
}

// drop closes the connection without a byte of response.
func (c *call) drop() bool {
	conn, _, err := http.NewResponseController(c.w).Hijack()
	if err != nil {
		return true // fall back to aborting the handler
	}
	_ = conn.Close()
	return false
}

// stall waits until the client gives up or the authority is closed.
func (c *call) stall() {
	select {
	case <-c.r.Context().Done():
	case <-c.a.done:
	}
}

// sleep waits ms milliseconds of real time; false if the client or the
// authority went away first.
func (c *call) sleep(ms int64) bool {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.r.Context().Done():
		return false
	case <-c.a.done:
		return false
	}
}

// decodeJSON mimics axum's Json extractor: 415 without a JSON content-type,
// 400 for syntax errors (including an empty body), 422 for data errors.
func (c *call) decodeJSON(v any) *apiError {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || !(mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return errFramework(415)
	}
	if bytes.Equal(bytes.TrimSpace(c.body), []byte("null")) {
		return errFramework(422)
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return errFramework(400)
		}
		return errFramework(422)
	}
	return nil
}

// u32 reports whether an optional integer field fits serde's u32.
func u32(p *int64) bool { return p == nil || (*p >= 0 && *p <= math.MaxUint32) }

// auth checks `Authorization: Bearer <token>`
// (docs/protocol.md "Bearer authentication").
func (c *call) auth() *apiError {
	h, present := c.r.Header["Authorization"]
	if !present || len(h) == 0 || !strings.HasPrefix(h[0], "Bearer ") {
		return errAuthRequired
	}
	tok := strings.TrimPrefix(h[0], "Bearer ")
	c.a.mu.Lock()
	known := c.a.tokens[tok]
	c.a.mu.Unlock()
	if !known {
		return errAuthFailed
	}
	c.token = tok
	return nil
}

func (a *Authority) statusBody() *response {
	a.mu.Lock()
	defer a.mu.Unlock()
	return ok(200, map[string]any{
		"active_locks":   len(a.leases),
		"status":         "ok",
		"total_acquires": a.totalAcquires,
		"total_releases": a.totalReleases,
		"total_users":    len(a.tokens),
		"uptime_seconds": int64(a.now().Sub(a.start) / time.Second),
	})
}
