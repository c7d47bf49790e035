package supervisor

import (
	"encoding/json"
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
