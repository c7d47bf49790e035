package holdcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/octostore-supervisor/supervisor/hold"
)

// humanWriter turns the hold's JSONL into upstream's human lines
// (docs/protocol.md "Human lines"): "<kind> <name> · <event> · <detail>", with
// control characters escaped so a hostile name cannot forge lines on a
// terminal.
type humanWriter struct {
	w   io.Writer
	buf bytes.Buffer
}

func (h *humanWriter) Write(p []byte) (int, error) {
	h.buf.Write(p)
	for {
		line, err := h.buf.ReadBytes('\n')
		if err != nil {
			h.buf.Write(line) // an incomplete line waits for the rest
			return len(p), nil
		}
		var ev struct {
			Event        string  `json:"event"`
			Kind         string  `json:"kind"`
			Name         string  `json:"name"`
			Term         *uint64 `json:"term"`
			RetryAfterMs *uint64 `json:"retry_after_ms"`
			ReasonCode   string  `json:"reason_code"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		var detail string
		switch ev.Event {
		case "waiting":
			var ms uint64
			if ev.RetryAfterMs != nil {
				ms = *ev.RetryAfterMs
			}
			detail = fmt.Sprintf("waiting; retry in %dms", ms)
		case "leader", "acquired", "renewed":
			if ev.Term != nil {
				detail = fmt.Sprintf("term %d", *ev.Term)
			}
		case "released":
			detail = "released cleanly"
		default:
			detail = ev.ReasonCode
			if detail == "" {
				detail = "unknown"
			}
		}
		if _, err := fmt.Fprintf(h.w, "%s %s · %s · %s\n", hold.TerminalSafe(ev.Kind), hold.TerminalSafe(ev.Name), hold.TerminalSafe(ev.Event), hold.TerminalSafe(detail)); err != nil {
			return len(p), err
		}
	}
}
