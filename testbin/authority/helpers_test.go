package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 8, 2, 12, 0, 0, 0, time.UTC)

const tok = "tok-A"

var reqIDRe = regexp.MustCompile(`^req_[0-9a-f]{32}$`)

type fake struct {
	a   *Authority
	clk *ManualClock
	srv *httptest.Server
}

func newFake(t *testing.T) *fake {
	t.Helper()
	clk := NewManualClock(t0)
	a := New(Options{Tokens: []string{tok, "tok-B"}, Clock: clk, KeepaliveInterval: 100 * time.Millisecond})
	srv := httptest.NewServer(a)
	// a.Close first: it releases stalled handlers that srv.Close waits for.
	t.Cleanup(func() { a.Close(); srv.Close() })
	return &fake{a: a, clk: clk, srv: srv}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends one request; body "" means no body and no content-type. bearer ""
// means no Authorization header.
func (f *fake) do(t *testing.T, method, path, body, bearer string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Regexp(t, reqIDRe, resp.Header.Get("x-request-id"))
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func field[T any](t *testing.T, body, key string) T {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	var v T
	require.NoError(t, json.Unmarshal(m[key], &v), body)
	return v
}

// errBody is the exact alphabetical error body for a reply.
func errBody(r reply, code, errText, details string) string {
	return `{"code":"` + code + `","details":"` + details + `","error":"` + errText + `","request_id":"` + r.header.Get("x-request-id") + `"}`
}

func (f *fake) campaign(t *testing.T, room, cand string) (reply, string) {
	t.Helper()
	r := f.do(t, "POST", "/elections/"+room+"/campaign", `{"candidate_id":"`+cand+`","ttl_seconds":30}`, "")
	require.Equal(t, 200, r.status, r.body)
	if strings.HasPrefix(r.body, `{"status":"leader"`) {
		return r, field[string](t, r.body, "leader_token")
	}
	return r, ""
}

func (f *fake) session(t *testing.T, bearer string) string {
	t.Helper()
	r := f.do(t, "POST", "/sessions", `{"ttl_seconds":30}`, bearer)
	require.Equal(t, 201, r.status, r.body)
	return field[string](t, r.body, "session_id")
}

func (f *fake) acquire(t *testing.T, name, sid string) reply {
	t.Helper()
	return f.do(t, "POST", "/locks/"+name+"/acquire", `{"ephemeral":true,"session_id":"`+sid+`","ttl_seconds":120}`, tok)
}

// openSSE opens a watch stream and returns a frame reader.
func (f *fake) openSSE(t *testing.T, path, bearer string) (*http.Response, func() string) {
	t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	next := func() string {
		t.Helper()
		var sb strings.Builder
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err, sb.String())
			sb.WriteString(line)
			if line == "\n" {
				return sb.String()
			}
		}
	}
	return resp, next
}
