package hold

import (
	"encoding/json"
	"fmt"
	"time"
)

// Lock acquire status tags (docs/protocol.md "Acquire").
const (
	LockStatusAcquired = "acquired"
	LockStatusHeld     = "held"
	LockStatusDelayed  = "delayed"
)

// SessionCreateResponse is a decoded 201 from POST /sessions
// (docs/protocol.md "Sessions").
type SessionCreateResponse struct {
	SessionID             string
	ExpiresAt             time.Time
	KeepaliveIntervalSecs uint64
}

// KeepaliveResponse is a decoded 200 from POST /sessions/{id}/keepalive.
type KeepaliveResponse struct {
	SessionID string
	ExpiresAt time.Time
}

// AcquireResponse is a decoded acquire answer (200 acquired/held, 409
// delayed). For acquired, LeaseID, FencingToken, ExpiresAt and RenewAfterMS
// are set; for held and delayed, RetryAfterMS is.
type AcquireResponse struct {
	Status       string
	LeaseID      string
	FencingToken uint64
	ExpiresAt    time.Time
	RenewAfterMS uint64
	RetryAfterMS uint64
}

// LockRenewResponse is a decoded 200 from POST /locks/{name}/renew
// (docs/protocol.md "Lock renew").
type LockRenewResponse struct {
	LeaseID      string
	ExpiresAt    time.Time
	RenewAfterMS uint64
}

// DecodeSessionCreateResponse decodes a session creation success strictly.
func DecodeSessionCreateResponse(body []byte) (SessionCreateResponse, error) {
	var w struct {
		SessionID *string    `json:"session_id"`
		ExpiresAt *time.Time `json:"expires_at"`
		Interval  *uint64    `json:"keepalive_interval_secs"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return SessionCreateResponse{}, err
	}
	switch {
	case w.SessionID == nil:
		return SessionCreateResponse{}, missingField("session_id")
	case w.ExpiresAt == nil:
		return SessionCreateResponse{}, missingField("expires_at")
	case w.Interval == nil:
		return SessionCreateResponse{}, missingField("keepalive_interval_secs")
	}
	return SessionCreateResponse{SessionID: *w.SessionID, ExpiresAt: *w.ExpiresAt, KeepaliveIntervalSecs: *w.Interval}, nil
}

// DecodeKeepaliveResponse decodes a keepalive success strictly.
func DecodeKeepaliveResponse(body []byte) (KeepaliveResponse, error) {
	var w struct {
		SessionID *string    `json:"session_id"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return KeepaliveResponse{}, err
	}
	switch {
	case w.SessionID == nil:
		return KeepaliveResponse{}, missingField("session_id")
	case w.ExpiresAt == nil:
		return KeepaliveResponse{}, missingField("expires_at")
	}
	return KeepaliveResponse{SessionID: *w.SessionID, ExpiresAt: *w.ExpiresAt}, nil
}

// DecodeAcquireResponse decodes an acquire answer by its status tag.
func DecodeAcquireResponse(body []byte) (AcquireResponse, error) {
	var w struct {
		Status       *string    `json:"status"`
		LeaseID      *string    `json:"lease_id"`
		FencingToken *uint64    `json:"fencing_token"`
		ExpiresAt    *time.Time `json:"expires_at"`
		RenewAfterMS *uint64    `json:"renew_after_ms"`
		HolderID     *string    `json:"holder_id"`
		AvailableAt  *time.Time `json:"available_at"`
		RetryAfterMS *uint64    `json:"retry_after_ms"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return AcquireResponse{}, err
	}
	if w.Status == nil {
		return AcquireResponse{}, missingField("status")
	}
	r := AcquireResponse{Status: *w.Status}
	switch r.Status {
	case LockStatusAcquired:
		switch {
		case w.LeaseID == nil:
			return AcquireResponse{}, missingField("lease_id")
		case w.FencingToken == nil:
			return AcquireResponse{}, missingField("fencing_token")
		case w.ExpiresAt == nil:
			return AcquireResponse{}, missingField("expires_at")
		case w.RenewAfterMS == nil:
			return AcquireResponse{}, missingField("renew_after_ms")
		}
		r.LeaseID, r.FencingToken, r.ExpiresAt, r.RenewAfterMS = *w.LeaseID, *w.FencingToken, *w.ExpiresAt, *w.RenewAfterMS
	case LockStatusHeld:
		switch {
		case w.HolderID == nil:
			return AcquireResponse{}, missingField("holder_id")
		case w.ExpiresAt == nil:
			return AcquireResponse{}, missingField("expires_at")
		case w.RetryAfterMS == nil:
			return AcquireResponse{}, missingField("retry_after_ms")
		}
		r.RetryAfterMS = *w.RetryAfterMS
	case LockStatusDelayed:
		switch {
		case w.AvailableAt == nil:
			return AcquireResponse{}, missingField("available_at")
		case w.RetryAfterMS == nil:
			return AcquireResponse{}, missingField("retry_after_ms")
		}
		r.RetryAfterMS = *w.RetryAfterMS
	default:
		return AcquireResponse{}, fmt.Errorf("unknown variant `%s`, expected one of `acquired`, `held`, `delayed`", r.Status)
	}
	return r, nil
}

// DecodeLockRenewResponse decodes a lock renewal success strictly.
func DecodeLockRenewResponse(body []byte) (LockRenewResponse, error) {
	var w struct {
		LeaseID      *string    `json:"lease_id"`
		ExpiresAt    *time.Time `json:"expires_at"`
		RenewAfterMS *uint64    `json:"renew_after_ms"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return LockRenewResponse{}, err
	}
	switch {
	case w.LeaseID == nil:
		return LockRenewResponse{}, missingField("lease_id")
	case w.ExpiresAt == nil:
		return LockRenewResponse{}, missingField("expires_at")
	case w.RenewAfterMS == nil:
		return LockRenewResponse{}, missingField("renew_after_ms")
	}
	return LockRenewResponse{LeaseID: *w.LeaseID, ExpiresAt: *w.ExpiresAt, RenewAfterMS: *w.RenewAfterMS}, nil
}

// isJSONNull reports whether body is exactly the JSON value null (the only
// release answer that confirms the release, docs/protocol.md "Release").
func isJSONNull(body []byte) bool {
	var v any
	return json.Unmarshal(body, &v) == nil && v == nil
}

// Request bodies of docs/protocol.md "Requests" (alphabetical keys, compact).
func sessionCreateBody() []byte {
	return mustJSON(map[string]any{"ttl_seconds": uint64(LockSessionTTL / time.Second)})
}

func acquireBody(sessionID string, ttlSeconds uint64) []byte {
	return mustJSON(map[string]any{"ephemeral": true, "session_id": sessionID, "ttl_seconds": ttlSeconds})
}

func lockRenewBody(leaseID string, ttlSeconds uint64) []byte {
	return mustJSON(map[string]any{"lease_id": leaseID, "ttl_seconds": ttlSeconds})
}

func releaseBody(leaseID string) []byte {
	return mustJSON(map[string]any{"lease_id": leaseID})
}
