package hold

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Failure codes the client itself produces (the server's stable codes are listed
// in isKnownServerCode).
const (
	CodeTransportError          = "transport_error"
	codeResponseTooLarge        = "response_too_large"
	codeInvalidResponse         = "invalid_response"
	codeRequestFailed           = "request_failed"
	CodeInternalError           = "internal_error"
	codeSessionIdentityMismatch = "session_identity_mismatch"
)

// maxServerRetryDelayMS is the largest retry_after_ms the client believes
// (docs/protocol.md "Response handling", "Constants"); anything outside
// 1..=this is "invalid guidance".
const maxServerRetryDelayMS = 300_000

// isKnownServerCode reports one of the 15 documented stable codes
// (docs/protocol.md "Error body"). Any other code in an error body is replaced,
// so an unknown (possibly attacker-chosen) string never reaches events or
// stderr.
func isKnownServerCode(code string) bool {
	switch code {
	case "authentication_required", "authentication_failed", "forbidden", "invalid_input",
		"invalid_ttl", "invalid_lock_name", "not_found", "session_expired", "lease_not_current",
		"conflict", "capacity_exceeded", "lock_limit_exceeded", "rate_limited",
		"upstream_unavailable", "internal_error":
		return true
	}
	return false
}

// Failure is one failed API call, carrying what the hold state machines need to
// choose between waiting, losing and exiting
// (docs/protocol.md "Response handling", "Failure classes").
type Failure struct {
	// Status is the HTTP status, 0 when no response was received.
	Status int
	// Code is a stable code: a documented server code or one of the Code*
	// constants.
	Code string
	// Details is the human text for stderr (never contains the request id).
	Details string
	// RetryAfterMS is the server's retry guidance, only ever in
	// 1..=maxServerRetryDelayMS; 0 means none.
	RetryAfterMS uint64
	// RequestID is a validated "req_<32 lowercase hex>" or "".
	RequestID string
	// Transport marks failures where the server's answer could not be
	// confirmed (no response, unreadable, oversize, undecodable success).
	Transport bool
	// Cause is the underlying Go error, if any, kept for errors.Is (e.g. a
	// context deadline).
	Cause error
}

// Error is the diagnostic (details, then the request ID) without any
// redaction; print DiagnosticRedacting when a secret may be in it.
func (f *Failure) Error() string { return f.diagnostic() }

// Unwrap is the underlying Go error, so errors.Is sees a context deadline.
func (f *Failure) Unwrap() error { return f.Cause }

// diagnostic is the stderr text after "octostore: ": details, then the request
// id when one is known.
func (f *Failure) diagnostic() string {
	if f.RequestID != "" {
		return f.Details + " (request " + f.RequestID + ")"
	}
	return f.Details
}

// DiagnosticRedacting is diagnostic with every occurrence of secret (the bearer
// token on lock commands) replaced by "[REDACTED]".
func (f *Failure) DiagnosticRedacting(secret string) string {
	return Redact(f.diagnostic(), secret)
}

// Redact replaces secret in s; an empty secret redacts nothing.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}

// retryableBeforeAcquire: the failure may be retried (with a waiting event)
// while no authority is held (docs/protocol.md "Failure classes").
func (f *Failure) retryableBeforeAcquire() bool {
	if f.Transport || f.Status >= 500 && f.Status <= 599 {
		return true
	}
	switch f.Code {
	case "rate_limited", "capacity_exceeded", "upstream_unavailable", "internal_error":
		return true
	}
	return false
}

// provesLoss: the server has said the session/lease/leadership is gone or was
// never ours (docs/protocol.md "Failure classes").
func (f *Failure) provesLoss() bool {
	switch f.Code {
	case "lease_not_current", "not_found", "session_expired", "authentication_failed",
		"authentication_required", "forbidden", codeSessionIdentityMismatch, "invalid_input",
		"invalid_ttl", "invalid_lock_name":
		return true
	}
	return false
}

// clientError reports an HTTP 4xx status.
func (f *Failure) clientError() bool { return f.Status >= 400 && f.Status <= 499 }

// ExitCode is the exit status for a non-retryable pre-acquisition failure in a
// hold (docs/protocol.md "Election hold" step 9, "Lock hold" step 10): 64 when
// the server answered 4xx, else 70.
func (f *Failure) ExitCode() int {
	if f.clientError() {
		return ExitUsage
	}
	return ExitSoftware
}

// transportFailure is any failure to obtain a complete response.
func transportFailure(cause error) *Failure {
	return &Failure{
		Code:      CodeTransportError,
		Details:   "could not confirm the server response",
		Transport: true,
		Cause:     cause,
	}
}

// invalidSessionIntervalFailure is the failure upstream reports when a session
// is created with keepalive_interval_secs outside 1..=30
// (docs/protocol.md "Lock hold").
func invalidSessionIntervalFailure() *Failure {
	return &Failure{
		Code:      codeInvalidResponse,
		Details:   "server returned keepalive_interval_secs outside 1..=30",
		Transport: true,
	}
}

// validRequestID keeps only "req_" + 32 lower-case hex digits
// (docs/protocol.md "Request IDs", "Response handling"), so nothing else a
// server sends can be echoed to stderr as a request id.
func validRequestID(v string) bool {
	s, ok := strings.CutPrefix(v, "req_")
	if !ok || len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// errorBody is the decodable shape of a server error
// (docs/protocol.md "Response handling" step 5). Pointers distinguish absent
// from zero; any type mismatch voids the whole body.
type errorBody struct {
	Code         *string `json:"code"`
	Details      *string `json:"details"`
	RetryAfterMS *uint64 `json:"retry_after_ms"`
	RequestID    *string `json:"request_id"`
}

// decodeErrorResponse builds the Failure for a status outside the accepted set
// (docs/protocol.md "Response handling" step 5). headerID is the
// already-validated x-request-id ("" if none).
func decodeErrorResponse(status int, body []byte, headerID string) *Failure {
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		// Upstream decodes into a struct and, on any error, treats every
		// field as absent; a partially filled Go struct must not leak through.
		eb = errorBody{}
	}
	f := &Failure{Status: status, RequestID: headerID}
	if eb.RequestID != nil && validRequestID(*eb.RequestID) {
		f.RequestID = *eb.RequestID
	}
	if eb.RetryAfterMS != nil {
		if g := *eb.RetryAfterMS; g < 1 || g > maxServerRetryDelayMS {
			f.Code = codeInvalidResponse
			f.Details = "server returned invalid retry_after_ms guidance"
			return f
		}
		f.RetryAfterMS = *eb.RetryAfterMS
	}
	switch {
	case eb.Code != nil && isKnownServerCode(*eb.Code):
		f.Code = *eb.Code
	case status >= 500 && status <= 599:
		f.Code = CodeInternalError
	default:
		f.Code = codeRequestFailed
	}
	if eb.Details != nil {
		f.Details = *eb.Details
	} else {
		f.Details = "server returned HTTP " + statusLine(status)
	}
	return f
}

// statusLine renders a status the way Rust's http::StatusCode Display does:
// "<code> <canonical reason>". Go's reason phrases match the http crate except
// for the few older RFC names overridden here.
func statusLine(status int) string {
	reason := ""
	switch status {
	case http.StatusRequestEntityTooLarge:
		reason = "Payload Too Large"
	case http.StatusRequestURITooLong:
		reason = "URI Too Long"
	case http.StatusRequestedRangeNotSatisfiable:
		reason = "Range Not Satisfiable"
	default:
		reason = http.StatusText(status)
	}
	if reason == "" {
		reason = "<unknown status code>"
	}
	return strconv.Itoa(status) + " " + reason
}
