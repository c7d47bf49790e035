package hold

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testReqID = "req_0123456789abcdef0123456789abcdef"

func newTestClient(t *testing.T, rawURL string, capability bool) *Client {
	t.Helper()
	s, err := ValidateServer(rawURL, capability, false)
	require.NoError(t, err)
	c, err := NewClient(ClientOptions{Server: s, CapabilityBearing: capability, ConnectTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func asFailure(t *testing.T, err error) *Failure {
	t.Helper()
	var f *Failure
	require.True(t, errors.As(err, &f), "want *Failure, got %T: %v", err, err)
	return f
}

func TestEncodeSegment(t *testing.T) {
	cases := map[string]string{
		"repo/issue-1":   "repo%2Fissue-1",
		"a-b.c_d~e":      "a-b.c_d~e",
		"$&+:=@ ":        "%24%26%2B%3A%3D%40%20",
		"é":              "%C3%A9",
		"%2F":            "%252F",
		"..":             "..",
		"a?b#c":          "a%3Fb%23c",
		"\x00\x7f":       "%00%7F",
		"Room-Z9":        "Room-Z9",
		"repo/octo/1842": "repo%2Focto%2F1842",
	}
	for in, want := range cases {
		require.Equal(t, want, EncodeSegment(in), in)
	}
}

func TestValidRequestID(t *testing.T) {
	require.True(t, validRequestID(testReqID))
	for _, bad := range []string{"", "req_", "req_0123456789ABCDEF0123456789abcdef", "req_0123456789abcdef0123456789abcde",
		"req_0123456789abcdef0123456789abcdef0", "REQ_0123456789abcdef0123456789abcdef", "req_0123456789abcdef0123456789abcdeg", "x" + testReqID} {
		require.False(t, validRequestID(bad), bad)
	}
}

func TestCallHeadersAndPath(t *testing.T) {
	type seen struct {
		method, uri, ua, accept, acceptEnc, ctype, auth, body string
		hasCType, hasAuth, hasAcceptEnc                       bool
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1024)
		n, _ := r.Body.Read(b)
		_, hasCT := r.Header["Content-Type"]
		_, hasAuth := r.Header["Authorization"]
		_, hasAE := r.Header["Accept-Encoding"]
		got <- seen{r.Method, r.RequestURI, r.UserAgent(), r.Header.Get("Accept"), r.Header.Get("Accept-Encoding"),
			r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b[:n]), hasCT, hasAuth, hasAE}
		w.Header().Set("X-Request-Id", testReqID)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/base/", true)

	body := []byte(`{"ephemeral":true,"session_id":"s","ttl_seconds":120}`)
	resp, err := c.call(context.Background(), request{
		Method: http.MethodPost, Path: "/locks/" + EncodeSegment("repo/a b+c") + "/acquire",
		Body: body, Bearer: "tok", Accepted: []int{200, 409},
	}, nil)
	require.NoError(t, err)
	require.Equal(t, 200, resp.Status)
	require.Equal(t, testReqID, resp.RequestID)
	require.Equal(t, `{"ok":true}`, string(resp.Body))
	s := <-got
	require.Equal(t, "POST", s.method)
	require.Equal(t, "/base/locks/repo%2Fa%20b%2Bc/acquire", s.uri)
	require.Equal(t, "octostore-cli/0.14.4", s.ua)
	require.Equal(t, "*/*", s.accept)
	require.False(t, s.hasAcceptEnc, "no Accept-Encoding may be sent")
	require.Equal(t, "application/json", s.ctype)
	require.Equal(t, "Bearer tok", s.auth)
	require.Equal(t, string(body), s.body)

	_, err = c.call(context.Background(), request{Method: http.MethodPost, Path: "/elections", Accepted: []int{201, 200}}, nil)
	require.NoError(t, err)
	s = <-got
	require.False(t, s.hasCType, "no content-type without a body")
	require.False(t, s.hasAuth)

	_, err = c.call(context.Background(), request{Method: http.MethodGet, Path: "/locks/x/watch", Accept: "text/event-stream", Accepted: []int{200}}, nil)
	require.NoError(t, err)
	require.Equal(t, "text/event-stream", (<-got).accept)
}

func TestCallNoRedirect(t *testing.T) {
	var targetHits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer target.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/elections", code)
		}))
		c := newTestClient(t, srv.URL, true)
		_, err := c.call(context.Background(), request{Method: http.MethodPost, Path: "/elections", Bearer: "tok", Accepted: []int{201}}, nil)
		srv.Close()
		f := asFailure(t, err)
		require.Equal(t, code, f.Status)
		require.Equal(t, codeRequestFailed, f.Code)
		require.Equal(t, "server returned HTTP "+statusLine(code), f.Details)
		require.False(t, f.Transport)
		require.False(t, f.retryableBeforeAcquire())
		require.Equal(t, ExitSoftware, f.ExitCode())
	}
	require.Equal(t, "302 Found", statusLine(302))
	require.Zero(t, targetHits.Load(), "redirect must not be followed")
}

func TestNoProxyForCapabilityLoopback(t *testing.T) {
	var trapHits, serverHits atomic.Int64
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapHits.Add(1)
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer trap.Close()
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, trap.URL)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		t.Setenv(k, "")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serverHits.Add(1)
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()

	for _, raw := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		c := newTestClient(t, raw, true)
		require.Nil(t, c.http.Transport.(*http.Transport).Proxy, "capability-bearing loopback must not consult any proxy")
		_, err := c.call(context.Background(), request{Method: http.MethodGet, Path: "/locks/x", Bearer: "tok", Accepted: []int{200}}, nil)
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, serverHits.Load())
	require.Zero(t, trapHits.Load())

	// Everything else uses the environment's proxies.
	c := newTestClient(t, srv.URL, false)
	require.NotNil(t, c.http.Transport.(*http.Transport).Proxy)
	c = newTestClient(t, "https://api.octostore.io", true)
	require.NotNil(t, c.http.Transport.(*http.Transport).Proxy)
}

func TestCallResponseBound(t *testing.T) {
	big := strings.Repeat("x", maxResponseBytes+1)
	exact := `"` + strings.Repeat("x", maxResponseBytes-2) + `"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The client stops reading past the bound and drops the connection.
		// Under Wine 8 that does not always fail the server's blocked write,
		// and srv.Close would wait for it forever; the deadline, generous for
		// a loopback megabyte, lets the handler give up. The client sees the
		// same bytes either way.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(20 * time.Second))
		w.Header().Set("X-Request-Id", testReqID)
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.WriteHeader(200)
			_, _ = w.Write([]byte(big))
		case "/chunked":
			w.WriteHeader(200)
			for i := 0; i < len(big); i += 4096 {
				_, _ = w.Write([]byte(big[i:min(i+4096, len(big))]))
				w.(http.Flusher).Flush()
			}
		case "/error":
			w.WriteHeader(500)
			_, _ = w.Write([]byte(big))
		case "/exact":
			w.WriteHeader(200)
			_, _ = w.Write([]byte(exact))
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, false)
	for _, p := range []string{"/length", "/chunked", "/error"} {
		_, err := c.call(context.Background(), request{Method: http.MethodGet, Path: p, Accepted: []int{200}}, nil)
		f := asFailure(t, err)
		require.Equal(t, codeResponseTooLarge, f.Code, p)
		require.Equal(t, "server response exceeded 1048576 bytes", f.Details)
		require.True(t, f.Transport)
		require.True(t, f.retryableBeforeAcquire())
		require.Equal(t, testReqID, f.RequestID)
		require.NotZero(t, f.Status)
	}
	var s string
	resp, err := c.call(context.Background(), request{Method: http.MethodGet, Path: "/exact", Accepted: []int{200}},
		func(b []byte) error { return json.Unmarshal(b, &s) })
	require.NoError(t, err)
	require.Len(t, resp.Body, maxResponseBytes)
	require.Len(t, s, maxResponseBytes-2)
}

func TestCallErrorBodyDecoding(t *testing.T) {
	const otherID = "req_ffffffffffffffffffffffffffffffff"
	cases := []struct {
		name       string
		status     int
		headerID   string
		body       string
		code       string
		details    string
		retry      uint64
		reqID      string
		retryable  bool
		provesLoss bool
	}{
		{"rate limited", 429, otherID,
			`{"code":"rate_limited","details":"Rate limit exceeded; retry in 30 seconds","error":"Rate limit exceeded","request_id":"` + testReqID + `","retry_after_ms":30000}`,
			"rate_limited", "Rate limit exceeded; retry in 30 seconds", 30000, testReqID, true, false},
		{"header id used when body has none", 404, otherID, `{"code":"not_found","details":"Lock not found"}`,
			"not_found", "Lock not found", 0, otherID, false, true},
		{"invalid body id falls back to header", 410, otherID, `{"code":"session_expired","details":"Session expired","request_id":"req_XYZ"}`,
			"session_expired", "Session expired", 0, otherID, false, true},
		{"bad header id dropped", 400, "req_bad", `{"code":"lease_not_current","details":"Invalid lease ID"}`,
			"lease_not_current", "Invalid lease ID", 0, "", false, true},
		{"unknown code 4xx", 400, "", `{"code":"teapot","details":"x"}`, "request_failed", "x", 0, "", false, false},
		{"unknown code 5xx", 503, "", `{"code":"teapot"}`, "internal_error", "server returned HTTP 503 Service Unavailable", 0, "", true, false},
		{"not json 4xx", 422, "", `oops`, "request_failed", "server returned HTTP 422 Unprocessable Entity", 0, "", false, false},
		{"empty 413", 413, "", ``, "request_failed", "server returned HTTP 413 Payload Too Large", 0, "", false, false},
		{"unknown status", 599, "", ``, "internal_error", "server returned HTTP 599 <unknown status code>", 0, "", true, false},
		{"retry zero invalid", 429, "", `{"code":"rate_limited","details":"d","retry_after_ms":0}`,
			"invalid_response", "server returned invalid retry_after_ms guidance", 0, "", false, false},
		{"retry too large invalid", 409, "", `{"code":"capacity_exceeded","retry_after_ms":300001}`,
			"invalid_response", "server returned invalid retry_after_ms guidance", 0, "", false, false},
		{"retry max ok", 409, "", `{"code":"capacity_exceeded","details":"Capacity exceeded: full","retry_after_ms":300000}`,
			"capacity_exceeded", "Capacity exceeded: full", 300000, "", true, false},
		{"retry min ok", 429, "", `{"code":"rate_limited","retry_after_ms":1}`,
			"rate_limited", "server returned HTTP 429 Too Many Requests", 1, "", true, false},
		{"negative retry voids body", 429, "", `{"code":"rate_limited","details":"d","retry_after_ms":-1}`,
			"request_failed", "server returned HTTP 429 Too Many Requests", 0, "", false, false},
		{"float retry voids body", 429, "", `{"code":"rate_limited","details":"d","retry_after_ms":1.5}`,
			"request_failed", "server returned HTTP 429 Too Many Requests", 0, "", false, false},
		{"wrong code type voids body", 403, "", `{"code":7,"details":"d"}`,
			"request_failed", "server returned HTTP 403 Forbidden", 0, "", false, false},
		{"null fields are absent", 401, "", `{"code":null,"details":null,"retry_after_ms":null}`,
			"request_failed", "server returned HTTP 401 Unauthorized", 0, "", false, false},
		{"array body", 400, "", `[1]`, "request_failed", "server returned HTTP 400 Bad Request", 0, "", false, false},
		{"forbidden", 403, "", `{"code":"forbidden","details":"Forbidden: Public elections are disabled on this server"}`,
			"forbidden", "Forbidden: Public elections are disabled on this server", 0, "", false, true},
		{"upstream", 502, "", `{"code":"upstream_unavailable","details":"Upstream service unavailable"}`,
			"upstream_unavailable", "Upstream service unavailable", 0, "", true, false},
		{"conflict", 409, "", `{"code":"conflict","details":"Conflict: acl"}`, "conflict", "Conflict: acl", 0, "", false, false},
		{"lock limit", 403, "", `{"code":"lock_limit_exceeded","details":"Lock limit exceeded (max 100 per user)"}`,
			"lock_limit_exceeded", "Lock limit exceeded (max 100 per user)", 0, "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.headerID != "" {
					w.Header().Set("X-Request-Id", tc.headerID)
				}
				w.Header().Set("Retry-After", "999") // must be ignored
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, false)
			_, err := c.call(context.Background(), request{Method: http.MethodPost, Path: "/x", Accepted: []int{200}}, nil)
			f := asFailure(t, err)
			require.Equal(t, tc.status, f.Status)
			require.Equal(t, tc.code, f.Code)
			require.Equal(t, tc.details, f.Details)
			require.Equal(t, tc.retry, f.RetryAfterMS)
			require.Equal(t, tc.reqID, f.RequestID)
			require.False(t, f.Transport)
			require.Equal(t, tc.retryable, f.retryableBeforeAcquire())
			require.Equal(t, tc.provesLoss, f.provesLoss())
			if tc.reqID != "" {
				require.Equal(t, tc.details+" (request "+tc.reqID+")", f.Error())
			} else {
				require.Equal(t, tc.details, f.Error())
			}
			if tc.status < 500 {
				require.Equal(t, ExitUsage, f.ExitCode())
			} else {
				require.Equal(t, ExitSoftware, f.ExitCode())
			}
		})
	}
}

func TestCallMalformedSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", testReqID)
		w.WriteHeader(409)
		_, _ = w.Write([]byte(`{"code":"conflict","details":"Conflict: acl"}`))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, false)
	strict := func(b []byte) error {
		var v struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Status == "" {
			return errors.New("missing field `status`")
		}
		return nil
	}
	_, err := c.call(context.Background(), request{Method: http.MethodPost, Path: "/locks/x/acquire", Accepted: []int{200, 409}}, strict)
	f := asFailure(t, err)
	require.Equal(t, codeInvalidResponse, f.Code)
	require.Equal(t, "server returned malformed JSON: missing field `status`", f.Details)
	require.True(t, f.Transport)
	require.True(t, f.retryableBeforeAcquire())
	require.Equal(t, 409, f.Status)
	require.Equal(t, testReqID, f.RequestID)
}

func TestCallTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	url := srv.URL
	srv.Close()
	c := newTestClient(t, url, false)
	_, err := c.call(context.Background(), request{Method: http.MethodGet, Path: "/", Accepted: []int{200}}, nil)
	f := asFailure(t, err)
	require.Equal(t, CodeTransportError, f.Code)
	require.Equal(t, "could not confirm the server response", f.Details)
	require.Zero(t, f.Status)
	require.True(t, f.Transport)
	require.True(t, f.retryableBeforeAcquire())
	require.False(t, f.provesLoss())

	// A body that stalls after "{" is bounded by the request timeout.
	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte("{"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stall.Close()
	defer close(release)
	c = newTestClient(t, stall.URL, false)
	start := time.Now()
	_, err = c.call(context.Background(), request{Method: http.MethodGet, Path: "/", Accepted: []int{200}, Timeout: 200 * time.Millisecond}, nil)
	f = asFailure(t, err)
	require.Equal(t, CodeTransportError, f.Code)
	require.True(t, isTimeout(err))
	require.Less(t, time.Since(start), 3*time.Second)

	// A caller deadline (authority deadline) also bounds the call.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.call(ctx, request{Method: http.MethodGet, Path: "/", Accepted: []int{200}}, nil)
	require.True(t, isTimeout(err))
}

func TestFailureHelpers(t *testing.T) {
	f := &Failure{Code: "forbidden", Details: "value s3cr leaked s3cr", RequestID: testReqID}
	require.Equal(t, "value [REDACTED] leaked [REDACTED] (request "+testReqID+")", f.DiagnosticRedacting("s3cr"))
	require.Equal(t, "abc", Redact("abc", ""))
	mismatch := &Failure{Code: codeSessionIdentityMismatch}
	require.True(t, mismatch.provesLoss())
	iv := invalidSessionIntervalFailure()
	require.Equal(t, "server returned keepalive_interval_secs outside 1..=30", iv.Details)
	require.True(t, iv.Transport)
	require.Equal(t, ExitSoftware, iv.ExitCode())
	for _, code := range []string{"lease_not_current", "not_found", "session_expired", "authentication_failed",
		"authentication_required", "forbidden", "invalid_input", "invalid_ttl", "invalid_lock_name"} {
		require.True(t, (&Failure{Code: code, Status: 400}).provesLoss(), code)
		require.False(t, (&Failure{Code: code, Status: 400}).retryableBeforeAcquire(), code)
	}
	// Any 5xx is retryable whatever its code.
	require.True(t, (&Failure{Code: "not_found", Status: 500}).retryableBeforeAcquire())
}

func writePEM(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(tempDir(t), "ca.pem")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestNewClientCABundleErrors(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	dir := tempDir(t)
	missing := filepath.Join(dir, "missing.pem")
	server, err := ValidateServer("https://example.com", true, false)
	require.NoError(t, err)

	cases := []struct {
		name  string
		value *string
		msg   string
		pfx   bool
	}{
		{"missing", strp(missing), "could not read OCTOSTORE_CA_BUNDLE " + missing + ": " + errTextNotFound, false},
		{"empty value is set", strp(""), "could not read OCTOSTORE_CA_BUNDLE : " + errTextNotFound, false},
		{"directory", strp(dir), "could not read OCTOSTORE_CA_BUNDLE " + dir + ": " + errTextIsDir, false},
		{"no pem", strp(writePEM(t, "hello\n")), "OCTOSTORE_CA_BUNDLE contains no certificates", false},
		{"empty file", strp(writePEM(t, "")), "OCTOSTORE_CA_BUNDLE contains no certificates", false},
		{"key only", strp(writePEM(t, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")), "OCTOSTORE_CA_BUNDLE contains no certificates", false},
		{"bad base64", strp(writePEM(t, "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n"+certPEM)), "could not parse OCTOSTORE_CA_BUNDLE: malformed PEM section", false},
		{"no end line", strp(writePEM(t, certPEM+"-----BEGIN CERTIFICATE-----\nAAAA\n")), "could not parse OCTOSTORE_CA_BUNDLE: malformed PEM section", false},
		{"bad der", strp(writePEM(t, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")), "could not parse OCTOSTORE_CA_BUNDLE: x509: ", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(ClientOptions{Server: server, CABundle: tc.value, ConnectTimeout: time.Second, RequestTimeout: time.Second})
			require.Error(t, err)
			require.ErrorIs(t, err, ErrCABundle)
			var ue *UsageError
			require.True(t, errors.As(err, &ue))
			if tc.pfx {
				require.True(t, strings.HasPrefix(err.Error(), tc.msg), err.Error())
			} else {
				require.Equal(t, tc.msg, err.Error())
			}
		})
	}
}

func TestCABundleTrustsAddedRoot(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`null`))
	}))
	// The untrusted attempt below makes the server log a handshake error.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	bundle := writePEM(t, "comment before\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"+certPEM)
	server, err := ValidateServer(srv.URL, true, false)
	require.NoError(t, err)
	req := request{Method: http.MethodPost, Path: "/locks/x/release", Body: []byte(`{"lease_id":"l"}`), Accepted: []int{200}}
	// Trust is under test, not speed: a TLS handshake under Wine beside the
	// etcd tests once took more than a 2 s connect timeout on CI's cores.
	const connectTimeout, requestTimeout = 30 * time.Second, 60 * time.Second

	c, err := NewClient(ClientOptions{Server: server, CapabilityBearing: true, CABundle: &bundle, ConnectTimeout: connectTimeout, RequestTimeout: requestTimeout})
	require.NoError(t, err)
	defer c.CloseIdleConnections() // before srv.Close, which waits for open connections
	_, err = c.call(context.Background(), req, nil)
	require.NoError(t, err)

	c, err = NewClient(ClientOptions{Server: server, CapabilityBearing: true, ConnectTimeout: connectTimeout, RequestTimeout: requestTimeout})
	require.NoError(t, err)
	_, err = c.call(context.Background(), req, nil)
	require.Equal(t, CodeTransportError, asFailure(t, err).Code, "an untrusted certificate is a transport failure")
}

func TestStatusLine(t *testing.T) {
	cases := map[int]string{200: "200 OK", 302: "302 Found", 413: "413 Payload Too Large", 414: "414 URI Too Long",
		416: "416 Range Not Satisfiable", 429: "429 Too Many Requests", 500: "500 Internal Server Error", 799: "799 <unknown status code>"}
	for code, want := range cases {
		require.Equal(t, want, statusLine(code))
	}
}
