package hold

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// userAgent is sent on every request: the upstream crate version
// (docs/protocol.md "HTTP client").
const userAgent = "octostore-cli/0.14.4"

// maxResponseBytes bounds every API response body
// (docs/protocol.md "Response handling" step 3).
const maxResponseBytes = 1 << 20

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Server is the validated server (ValidateServer).
	Server Server
	// CapabilityBearing is true for election hold and every lock command.
	CapabilityBearing bool
	// ConnectTimeout bounds TCP connect and the TLS handshake.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each whole request: connect, headers and body.
	RequestTimeout time.Duration
	// CABundle is OCTOSTORE_CA_BUNDLE: nil when unset, else its value (an
	// empty value is "set" and fails to read, as upstream).
	CABundle *string
	// VerifyLoopbackPeer makes every connection go through
	// VerifyLoopbackPeer: set when a bearer token goes over cleartext to a
	// loopback server without --allow-cleartext-credentials.
	VerifyLoopbackPeer bool
}

// Client talks to one OctoStore server. It is safe for concurrent use.
type Client struct {
	server         Server
	requestTimeout time.Duration
	http           *http.Client
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewClient builds the HTTP client of docs/protocol.md "HTTP client",
// "Response handling": redirects are never followed (a 3xx is an ordinary
// unaccepted status, so a bearer header can never be carried to a place
// ValidateServer did not approve); capability-bearing traffic to a loopback
// server bypasses every proxy (it was allowed over cleartext only because it
// stays on this host); other traffic honours the usual proxy variables;
// compression is off so no Accept-Encoding is sent. The only error is an
// unusable CA bundle (*UsageError, exit 64).
func NewClient(o ClientOptions) (*Client, error) {
	roots, err := LoadCABundle(o.CABundle)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if o.VerifyLoopbackPeer {
		dial = verifiedDial(dial)
	}
	tr := &http.Transport{
		DialContext:         dial,
		TLSHandshakeTimeout: o.ConnectTimeout,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        4,
		IdleConnTimeout:     90 * time.Second,
	}
	if o.CapabilityBearing && o.Server.Loopback {
		tr.Proxy = nil
	} else {
		tr.Proxy = http.ProxyFromEnvironment
	}
	return &Client{
		server:         o.Server,
		dial:           dial,
		requestTimeout: o.RequestTimeout,
		http: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}, nil
}

// ProbeLoopbackPeer connects to the server once, as a request would, and
// returns the *UntrustedListener that VerifyLoopbackPeer gave, if it gave
// one; any other outcome (nobody listening) is the requests' to meet. It
// lets a command refuse, with exit 64, before it starts; every later
// connection is checked all the same.
func (c *Client) ProbeLoopbackPeer(ctx context.Context) error {
	conn, err := c.dial(ctx, "tcp", c.server.hostPort())
	var u *UntrustedListener
	if errors.As(err, &u) {
		return u
	}
	if conn != nil {
		conn.Close()
	}
	return nil
}

// CloseIdleConnections releases pooled connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// request is one API call.
type request struct {
	Method string
	// Path is the API path starting with '/', with election ids and lock
	// names already passed through EncodeSegment.
	Path string
	// Body, when non-nil, is sent with content-type application/json. A nil
	// body sends no content-type (create room, keepalive, …).
	Body []byte
	// Bearer, when non-empty, is sent as "Authorization: Bearer <token>".
	Bearer string
	// Accept overrides "*/*" (watch uses text/event-stream).
	Accept string
	// Accepted lists the statuses whose body is a success
	// (docs/protocol.md "Response handling" step 4).
	Accepted []int
	// Timeout overrides the client's request timeout when positive.
	Timeout time.Duration
}

// response is an accepted response.
type response struct {
	Status    int
	RequestID string
	Body      []byte
}

// call performs req under ctx and the request timeout and classifies the result
// (docs/protocol.md "Response handling"). For an accepted status, decode (if
// non-nil) is applied to the body; its error becomes a transport-class
// invalid_response. Every error returned is a *Failure. The body is always read
// in full (within the bound and the timeout) before any decision, as upstream
// does.
func (c *Client) call(ctx context.Context, req request, decode func(body []byte) error) (response, error) {
	timeout := c.requestTimeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	hreq, err := c.newRequest(ctx, req)
	if err != nil {
		return response{}, transportFailure(err)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return response{}, transportFailure(err)
	}
	defer resp.Body.Close()
	data, requestID, f := readBody(resp)
	if f != nil {
		return response{}, f
	}
	for _, s := range req.Accepted {
		if s != resp.StatusCode {
			continue
		}
		if decode != nil {
			if err := decode(data); err != nil {
				return response{}, &Failure{Status: resp.StatusCode, Code: codeInvalidResponse,
					Details: "server returned malformed JSON: " + err.Error(), RequestID: requestID, Transport: true, Cause: err}
			}
		}
		return response{Status: resp.StatusCode, RequestID: requestID, Body: data}, nil
	}
	return response{}, decodeErrorResponse(resp.StatusCode, data, requestID)
}

// newRequest is req as an HTTP request with the headers upstream sends.
func (c *Client) newRequest(ctx context.Context, req request) (*http.Request, error) {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, c.server.endpoint(req.Path), body)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("User-Agent", userAgent)
	accept := req.Accept
	if accept == "" {
		accept = "*/*"
	}
	hreq.Header.Set("Accept", accept)
	if req.Body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if req.Bearer != "" {
		hreq.Header.Set("Authorization", "Bearer "+req.Bearer)
	}
	return hreq, nil
}

// readBody reads a response body in full, bounded at maxResponseBytes
// (docs/protocol.md "Response handling"), with its validated x-request-id
// (empty when invalid).
func readBody(resp *http.Response) (data []byte, requestID string, f *Failure) {
	requestID = resp.Header.Get("X-Request-Id")
	if !validRequestID(requestID) {
		requestID = ""
	}
	tooLarge := &Failure{Status: resp.StatusCode, Code: codeResponseTooLarge,
		Details: "server response exceeded " + strconv.Itoa(maxResponseBytes) + " bytes", RequestID: requestID, Transport: true}
	if resp.ContentLength > maxResponseBytes {
		return nil, requestID, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if len(data) > maxResponseBytes {
		return nil, requestID, tooLarge
	}
	if err != nil {
		return nil, requestID, transportFailure(err)
	}
	return data, requestID, nil
}

// isTimeout reports whether a Failure was caused by a context deadline or a
// network timeout, which later code uses to tell "deadline hit" from other
// transport trouble.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// EncodeSegment percent-encodes one path segment like the urlencoding crate
// (docs/protocol.md "Requests"): every byte except ASCII letters, digits
// and - . _ ~ becomes %XX with upper-case hex. url.PathEscape is not used
// because it leaves $&+:=@ alone.
func EncodeSegment(s string) string {
	const hexUpper = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)*3)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isASCIIAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexUpper[c>>4], hexUpper[c&15])
	}
	return string(b)
}

// caller makes one hold's requests, each bounded end to end by an authority
// deadline and (when watched) raced against signals through the run's
// Waiter.
type caller struct {
	client *Client
	w      *Waiter
}

type callResult struct {
	resp response
	err  error
}

// call performs req bounded by d. On DeadlineReached or Signalled the request
// is cancelled and awaited (Await with no abandoned hook): decode writes into
// the caller's variables, which must not change once call has returned. On
// Done the *Failure is nil or the API's (or transport's) failure.
func (c caller) call(d Deadline, watch bool, req request, decode func([]byte) error) (response, *Failure, Outcome, error) {
	o, res, err := Await(c.w, d, watch, nil, func(ctx context.Context) callResult {
		resp, err := c.client.call(ctx, req, decode)
		return callResult{resp, err}
	})
	if err != nil || o != Done {
		return response{}, nil, o, err
	}
	if res.err != nil {
		return response{}, failureOf(res.err), Done, nil
	}
	return res.resp, nil, Done, nil
}

// failureOf is err as a *Failure: the API's own, or a transport failure.
func failureOf(err error) *Failure {
	var f *Failure
	if !errors.As(err, &f) {
		f = transportFailure(err)
	}
	return f
}
