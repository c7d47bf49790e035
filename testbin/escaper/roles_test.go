package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// waitRoles waits until the pidfile holds at least want[role] lines of each
// role and returns the records by role. The bound is generous: it proves
// that a start did not happen, never how long one takes. On a miss it fails
// with the roles it did see and what the processes reported in the
// pidfile's errors file (a child's stderr is the null device), so a start
// that failed is told apart from one that was slow.
func waitRoles(t *testing.T, pidfile string, want map[string]int) map[string][]proctest.Record {
	t.Helper()
	var by map[string][]proctest.Record
	if proctest.Until(time.Minute, func() bool {
		by = map[string][]proctest.Record{}
		for _, e := range records(t, pidfile) {
			by[e.Role] = append(by[e.Role], e)
		}
		for r, n := range want {
			if len(by[r]) < n {
				return false
			}
		}
		return true
	}) {
		return by
	}
	seen := map[string]int{}
	for r, es := range by {
		seen[r] = len(es)
	}
	reported, err := os.ReadFile(errorsFile(pidfile))
	if err != nil {
		reported = []byte(fmt.Sprintf("(none: %v)", err))
	}
	t.Fatalf("timed out after a minute waiting for pidfile roles %v; seen %v; reported by the processes:\n%s",
		want, seen, reported)
	return nil
}

// records reads the pidfile, failing the test on a malformed line.
func records(t *testing.T, pidfile string) []proctest.Record {
	t.Helper()
	recs, err := proctest.ReadPidfile(pidfile)
	require.NoError(t, err)
	return recs
}
