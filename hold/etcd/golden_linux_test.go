//go:build linux

package etcd

import (
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
)

var (
	shapeTimes   = regexp.MustCompile(`"(observed_at|expires_at)":"[^"]*"`)
	shapeStrings = regexp.MustCompile(`"(server|fencing_key)":"[^"]*"`)
	shapeNumbers = regexp.MustCompile(`":[0-9]+`)
)

// shape keeps a line's keys, their order and its fixed strings; times,
// numbers, the server and the fencing key become placeholders.
func shape(line string) string {
	line = shapeTimes.ReplaceAllString(line, `"$1":T`)
	line = shapeStrings.ReplaceAllString(line, `"$1":S`)
	return shapeNumbers.ReplaceAllString(line, `":N`)
}

// The lines are the HTTP election hold's (hold/golden_test.go), field for
// field and in the same order, plus fencing_key after term on authority
// events.
func TestEventLinesAreGoldenShaped(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		a := m.authority(t, "/t17")
		first := startHold(t, a, election("room", "agent-a"))
		first.waitEvent(t, "leader", 20*time.Second)
		h := startHold(t, a, election("room", "agent-b"))
		h.waitEvent(t, "waiting", 20*time.Second)
		first.sigs <- syscall.SIGTERM
		h.waitEvent(t, "leader", 20*time.Second)
		h.waitEvent(t, "renewed", 20*time.Second)
		h.sigs <- syscall.SIGTERM
		require.Equal(t, hold.ExitSIGTERM, h.exit(t, 10*time.Second))
		const head = `{"schema_version":N,"sequence":N,"event":`
		const who = `"kind":"election","name":"room","server":S,"candidate_id":"agent-b",`
		const auth = `"term":N,"fencing_key":S,"expires_at":T,"authority_remaining_ms":N,"authority_observed_unix_ms":N,"authority_observed_continuous_ms":N,"observed_at":T}`
		var got []string
		for _, l := range h.out.Lines() {
			got = append(got, shape(l))
		}
		require.Equal(t, []string{
			head + `"waiting",` + who + `"retry_after_ms":N,"reason_code":"follower","observed_at":T}`,
			head + `"leader",` + who + auth,
			head + `"renewed",` + who + auth,
			head + `"released",` + who + `"term":N,"reason_code":"signal","observed_at":T}`,
		}, got)
		h.events(t) // and every line passes the supervisor's stream checks
	})
}
