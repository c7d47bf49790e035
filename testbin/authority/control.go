package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/octostore-supervisor/supervisor/events"
)

// serveControl is the test-only endpoint under /__control/ (see doc.go).
// Control requests are neither logged nor subject to faults, so a test's
// request counts only see the client under test.
func (a *Authority) serveControl(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if v != nil {
			_, _ = w.Write(marshal(v))
		}
	}
	bad := func(err error) { reply(400, map[string]string{"error": err.Error()}) }
	switch r.Method + " " + r.URL.Path {
	case "POST /__control/faults":
		var list []Fault
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
			if err := json.Unmarshal(body, &list); err != nil {
				bad(err)
				return
			}
		} else {
			var f Fault
			if err := json.Unmarshal(body, &f); err != nil {
				bad(err)
				return
			}
			list = []Fault{f}
		}
		ids := []int{}
		for _, f := range list {
			id, err := a.AddFault(f)
			if err != nil {
				bad(err)
				return
			}
			ids = append(ids, id)
		}
		reply(200, map[string]any{"ids": ids})
	case "GET /__control/faults":
		reply(200, a.Faults())
	case "DELETE /__control/faults":
		a.ClearFaults()
		reply(204, nil)
	case "GET /__control/requests":
		reply(200, a.Requests(r.URL.Query().Get("route")))
	case "DELETE /__control/requests":
		a.ResetRequests()
		reply(204, nil)
	case "POST /__control/clock":
		var req struct {
			AdvanceMs int64 `json:"advance_ms"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			bad(err)
			return
		}
		a.Advance(time.Duration(req.AdvanceMs) * time.Millisecond)
		reply(200, map[string]string{"now": events.FormatTimestamp(a.Now())})
	case "POST /__control/revoke":
		var req struct {
			ElectionID  string `json:"election_id"`
			CandidateID string `json:"candidate_id"`
			Lock        string `json:"lock"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			bad(err)
			return
		}
		if req.Lock != "" {
			reply(200, map[string]uint64{"term": a.StealLock(req.Lock)})
			return
		}
		reply(200, map[string]uint64{"term": a.RevokeLeader(req.ElectionID, req.CandidateID)})
	case "POST /__control/expire":
		var req struct {
			ElectionID string `json:"election_id"`
			Lock       string `json:"lock"`
			SessionID  string `json:"session_id"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			bad(err)
			return
		}
		var err error
		switch {
		case req.Lock != "":
			err = a.ExpireLock(req.Lock)
		case req.ElectionID != "":
			err = a.ExpireElection(req.ElectionID)
		default:
			err = a.ExpireSession(req.SessionID)
		}
		if err != nil {
			reply(404, map[string]string{"error": err.Error()})
			return
		}
		reply(204, nil)
	case "POST /__control/sweep":
		a.Sweep()
		reply(204, nil)
	case "POST /__control/elections":
		var req struct {
			Enabled bool `json:"enabled"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			bad(err)
			return
		}
		a.SetElectionsEnabled(req.Enabled)
		reply(204, nil)
	default:
		reply(404, map[string]string{"error": "unknown control route"})
	}
}
