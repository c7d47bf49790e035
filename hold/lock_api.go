package hold

import (
	"encoding/json"
	"fmt"
	"time"
)

// Lock acquire status tags (docs/protocol.md "Acquire").
const (
	lockStatusAcquired = "acquired"
	LockStatusHeld     = "held"
	lockStatusDelayed  = "delayed"
)

// sessionCreateResponse is a decoded 201 from POST /sessions
// (docs/protocol.md "Sessions").
type sessionCreateResponse struct {
	SessionID             string
	ExpiresAt             time.Time
	KeepaliveIntervalSecs uint64
}

// keepaliveResponse is a decoded 200 from POST /sessions/{id}/keepalive.
type keepaliveResponse struct {
	SessionID string
	ExpiresAt time.Time
}

// acquireResponse is a decoded acquire answer (200 acquired/held, 409
// delayed). For acquired, LeaseID, FencingToken, ExpiresAt and RenewAfterMS
// are set; for held and delayed, RetryAfterMS is.
type acquireResponse struct {
	Status       string
	LeaseID      string
	FencingToken uint64
	ExpiresAt    time.Time
	RenewAfterMS uint64
	RetryAfterMS uint64
}

// lockRenewResponse is a decoded 200 from POST /locks/{name}/renew
// (docs/protocol.md "Lock renew").
type lockRenewResponse struct {
	LeaseID      string
	ExpiresAt    time.Time
	RenewAfterMS uint64
}

// decodeSessionCreateResponse decodes a session creation success strictly.
func decodeSessionCreateResponse(body []byte) (sessionCreateResponse, error) {
	var w struct {
		SessionID *string    `json:"session_id"`
		ExpiresAt *time.Time `json:"expires_at"`
		Interval  *uint64    `json:"keepalive_interval_secs"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return sessionCreateResponse{}, err
	}
	if err := need(has("session_id", w.SessionID), has("expires_at", w.ExpiresAt),
		has("keepalive_interval_secs", w.Interval)); err != nil {
		return sessionCreateResponse{}, err
	}
	return sessionCreateResponse{SessionID: *w.SessionID, ExpiresAt: *w.ExpiresAt, KeepaliveIntervalSecs: *w.Interval}, nil
}

// decodeKeepaliveResponse decodes a keepalive success strictly.
func decodeKeepaliveResponse(body []byte) (keepaliveResponse, error) {
	var w struct {
		SessionID *string    `json:"session_id"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return keepaliveResponse{}, err
	}
	if err := need(has("session_id", w.SessionID), has("expires_at", w.ExpiresAt)); err != nil {
		return keepaliveResponse{}, err
	}
	return keepaliveResponse{SessionID: *w.SessionID, ExpiresAt: *w.ExpiresAt}, nil
}

// decodeAcquireResponse decodes an acquire answer by its status tag.
func decodeAcquireResponse(body []byte) (acquireResponse, error) {
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
		return acquireResponse{}, err
	}
	if w.Status == nil {
		return acquireResponse{}, missingField("status")
	}
	r := acquireResponse{Status: *w.Status}
	switch r.Status {
	case lockStatusAcquired:
		if err := need(has("lease_id", w.LeaseID), has("fencing_token", w.FencingToken),
			has("expires_at", w.ExpiresAt), has("renew_after_ms", w.RenewAfterMS)); err != nil {
			return acquireResponse{}, err
		}
		r.LeaseID, r.FencingToken, r.ExpiresAt, r.RenewAfterMS = *w.LeaseID, *w.FencingToken, *w.ExpiresAt, *w.RenewAfterMS
	case LockStatusHeld:
		if err := need(has("holder_id", w.HolderID), has("expires_at", w.ExpiresAt),
			has("retry_after_ms", w.RetryAfterMS)); err != nil {
			return acquireResponse{}, err
		}
		r.RetryAfterMS = *w.RetryAfterMS
	case lockStatusDelayed:
		if err := need(has("available_at", w.AvailableAt),
			has("retry_after_ms", w.RetryAfterMS)); err != nil {
			return acquireResponse{}, err
		}
		r.RetryAfterMS = *w.RetryAfterMS
	default:
		return acquireResponse{}, fmt.Errorf("unknown variant `%s`, expected one of `acquired`, `held`, `delayed`", r.Status)
	}
	return r, nil
}

// decodeLockRenewResponse decodes a lock renewal success strictly.
func decodeLockRenewResponse(body []byte) (lockRenewResponse, error) {
	var w struct {
		LeaseID      *string    `json:"lease_id"`
		ExpiresAt    *time.Time `json:"expires_at"`
		RenewAfterMS *uint64    `json:"renew_after_ms"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return lockRenewResponse{}, err
	}
	if err := need(has("lease_id", w.LeaseID), has("expires_at", w.ExpiresAt),
		has("renew_after_ms", w.RenewAfterMS)); err != nil {
		return lockRenewResponse{}, err
	}
	return lockRenewResponse{LeaseID: *w.LeaseID, ExpiresAt: *w.ExpiresAt, RenewAfterMS: *w.RenewAfterMS}, nil
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
