package hold

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// electionLeader is the leader object of campaign/renew/status bodies
// (docs/protocol.md "Campaign").
type electionLeader struct {
	CandidateID string
	Term        uint64
	ExpiresAt   time.Time
}

// ElectionStatusLeader and electionStatusFollower are the two tags a campaign
// or renew success can carry (docs/protocol.md "Campaign", "Election renew").
const (
	ElectionStatusLeader   = "leader"
	electionStatusFollower = "follower"
)

// campaignResponse is a decoded 200 from campaign or renew. For a leader,
// LeaderToken and RenewAfterMS are set; for a follower, RetryAfterMS is.
type campaignResponse struct {
	Status       string
	ElectionID   string
	Leader       electionLeader
	LeaderToken  string
	RenewAfterMS uint64
	RetryAfterMS uint64
}

// resignResponse is a decoded 200 from resign (docs/protocol.md "Resign").
type resignResponse struct {
	ElectionID   string
	Status       string
	PreviousTerm uint64
}

type wireElectionLeader struct {
	CandidateID *string    `json:"candidate_id"`
	Term        *uint64    `json:"term"`
	ExpiresAt   *time.Time `json:"expires_at"`
}

type wireCampaign struct {
	Status       *string             `json:"status"`
	ElectionID   *string             `json:"election_id"`
	Leader       *wireElectionLeader `json:"leader"`
	LeaderToken  *string             `json:"leader_token"`
	RenewAfterMS *uint64             `json:"renew_after_ms"`
	RetryAfterMS *uint64             `json:"retry_after_ms"`
}

func missingField(name string) error { return fmt.Errorf("missing field `%s`", name) }

// field is one field a strict decoder requires, and whether the body had it.
type field struct {
	name    string
	present bool
}

// has is the field name, present when v (decoded into a pointer) is not nil.
func has[T any](name string, v *T) field { return field{name, v != nil} }

// need is the error for the first absent field, nil when all are present. The
// fields come in the order upstream's serde types declare them, which is the
// order in which serde reports a missing one.
func need(fields ...field) error {
	for _, f := range fields {
		if !f.present {
			return missingField(f.name)
		}
	}
	return nil
}

// decodeCampaignResponse decodes a campaign or renew success strictly, as the
// upstream serde types do (docs/protocol.md "Response handling" step 4):
// unknown fields are ignored, but a missing required field, a wrong type, a
// negative number or an unknown status tag is an error.
func decodeCampaignResponse(body []byte) (campaignResponse, error) {
	var w wireCampaign
	if err := json.Unmarshal(body, &w); err != nil {
		return campaignResponse{}, err
	}
	if w.Status == nil {
		return campaignResponse{}, missingField("status")
	}
	var r campaignResponse
	r.Status = *w.Status
	switch r.Status {
	case ElectionStatusLeader, electionStatusFollower:
	default:
		return campaignResponse{}, fmt.Errorf("unknown variant `%s`, expected `leader` or `follower`", r.Status)
	}
	if w.ElectionID == nil {
		return campaignResponse{}, missingField("election_id")
	}
	r.ElectionID = *w.ElectionID
	if w.Leader == nil {
		return campaignResponse{}, missingField("leader")
	}
	if err := need(has("candidate_id", w.Leader.CandidateID), has("term", w.Leader.Term),
		has("expires_at", w.Leader.ExpiresAt)); err != nil {
		return campaignResponse{}, err
	}
	r.Leader = electionLeader{CandidateID: *w.Leader.CandidateID, Term: *w.Leader.Term, ExpiresAt: *w.Leader.ExpiresAt}
	if r.Status == ElectionStatusLeader {
		if w.LeaderToken == nil {
			return campaignResponse{}, missingField("leader_token")
		}
		if w.RenewAfterMS == nil {
			return campaignResponse{}, missingField("renew_after_ms")
		}
		r.LeaderToken, r.RenewAfterMS = *w.LeaderToken, *w.RenewAfterMS
	} else {
		if w.RetryAfterMS == nil {
			return campaignResponse{}, missingField("retry_after_ms")
		}
		r.RetryAfterMS = *w.RetryAfterMS
	}
	return r, nil
}

// decodeResignResponse decodes a resign success (docs/protocol.md "Resign").
func decodeResignResponse(body []byte) (resignResponse, error) {
	var w struct {
		ElectionID   *string `json:"election_id"`
		Status       *string `json:"status"`
		PreviousTerm *uint64 `json:"previous_term"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return resignResponse{}, err
	}
	if err := need(has("election_id", w.ElectionID), has("status", w.Status),
		has("previous_term", w.PreviousTerm)); err != nil {
		return resignResponse{}, err
	}
	return resignResponse{ElectionID: *w.ElectionID, Status: *w.Status, PreviousTerm: *w.PreviousTerm}, nil
}

// campaignBody and friends build the request bodies of
// docs/protocol.md "Requests" (alphabetical keys, compact). Marshalling a map
// sorts the keys.
func campaignBody(candidate string, ttlSeconds uint64) []byte {
	return mustJSON(map[string]any{"candidate_id": candidate, "ttl_seconds": ttlSeconds})
}

func renewBody(token string, ttlSeconds uint64) []byte {
	return mustJSON(map[string]any{"leader_token": token, "ttl_seconds": ttlSeconds})
}

func resignBody(token string) []byte {
	return mustJSON(map[string]any{"leader_token": token})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(errors.New("hold: cannot encode request body: " + err.Error()))
	}
	return b
}
