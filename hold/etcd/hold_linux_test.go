//go:build linux

package etcd

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
)

// Invariant 1 and 7: the term is the holder key's create revision, constant
// while held, strictly increasing across holders; SIGTERM revokes the lease
// (released) and only then does the next candidate lead.
func TestTermIsCreateRevisionAndSignalReleases(t *testing.T) {
	m := startMember(t)
	c := m.client(t)
	a := m.authority(t, "/t1")
	first := startHold(t, a, election("room", "alpha"))
	lead := first.waitEvent(t, "leader", 20*time.Second)
	ks := keys(t, c, "/t1/election/room/")
	require.Len(t, ks, 1)
	for _, rev := range ks {
		require.Equal(t, rev, term(lead), "term = create revision of the holder key")
	}
	second := startHold(t, a, election("room", "beta"))
	second.waitEvent(t, "waiting", 20*time.Second)
	first.waitEvent(t, "renewed", 20*time.Second)
	for _, e := range first.events(t) {
		if e["term"] != nil {
			require.Equal(t, term(lead), term(e), "term constant while held")
		}
	}
	first.sigs <- syscall.SIGTERM
	require.Equal(t, hold.ExitSIGTERM, first.exit(t, 10*time.Second))
	rel := first.waitEvent(t, "released", time.Second)
	require.Equal(t, "signal", rel["reason_code"])
	next := second.waitEvent(t, "leader", 20*time.Second)
	require.Greater(t, term(next), term(lead), "terms strictly increase across holders")
	require.Equal(t, "beta", next["candidate_id"])
}
