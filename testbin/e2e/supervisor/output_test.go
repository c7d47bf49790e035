package supervisor

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// stdoutEvents lists the event names a supervisor printed, checking that every
// stdout line is a supervisor line. Both harnesses (linux, windows) use it.
func stdoutEvents(t *testing.T, out *proctest.SyncBuffer) []string {
	t.Helper()
	var names []string
	for _, l := range out.Lines() {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "stdout line is not JSON: %q", l)
		require.Equal(t, "octostore-supervisor", m["source"], "stdout line is not a supervisor line: %q", l)
		names = append(names, m["event"].(string))
	}
	return names
}

// stdoutLine returns the decoded stdout line for an event, failing the test
// (with both streams) when there is none.
func stdoutLine(t *testing.T, out, errb *proctest.SyncBuffer, event string) map[string]any {
	t.Helper()
	for _, l := range out.Lines() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] == event {
			return m
		}
	}
	t.Fatalf("no %q line on stdout:\n%s\nstderr:\n%s", event, out.String(), errb.String())
	return nil
}

// createdRoom runs cmd, an `octostore election create --json`, and returns
// the room it created. Both harnesses' room makers (linux, windows) use it.
func createdRoom(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "octostore election create: %s%s", out, stderr.String())
	var room struct {
		ElectionID string `json:"election_id"`
	}
	require.NoError(t, json.Unmarshal(out, &room), "%s", out)
	require.NotEmpty(t, room.ElectionID)
	return room.ElectionID
}
