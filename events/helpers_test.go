package events

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	testRoom      = "g15BTc54MStBoX-momDJm6uBhJQKKtqQ"
	testCandidate = "agent-a"
	testLock      = "repo/octostore/issue-1842"
	testServer    = "https://api.octostore.io"
)

func electionTarget() Expect {
	return Expect{Kind: Election, Name: testRoom, Candidate: testCandidate}
}

func lockTarget() Expect { return Expect{Kind: Lock, Name: testLock} }

// el builds an election hold line around the given fields, in the hold's own
// key order, so the tables only spell out what each case is about.
func el(fields string) string {
	return fmt.Sprintf(`{"schema_version":1,%s,"kind":"election","name":%q,"server":%q,"candidate_id":%q,"observed_at":"2026-08-02T12:00:15.589012345Z"}`,
		fields, testRoom, testServer, testCandidate)
}

func lk(fields string) string {
	return fmt.Sprintf(`{"schema_version":1,%s,"kind":"lock","name":%q,"server":%q,"observed_at":"2026-08-02T12:00:15.589012345Z"}`,
		fields, testLock, testServer)
}

// auth is a complete authority triple; the receipt clock in tests is chosen
// relative to these emission times.
func auth(remainingMs int) string {
	return fmt.Sprintf(`"authority_remaining_ms":%d,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99500123`, remainingMs)
}

const (
	emitUnix = 1785672015589
	emitCont = 99500123
)

// requireClass checks that err belongs to exactly one class and carries msg.
func requireClass(t *testing.T, err error, class error, msg string) {
	t.Helper()
	if class == nil {
		require.NoError(t, err)
		return
	}
	require.Error(t, err)
	require.ErrorIs(t, err, class)
	other := ErrDoubt
	if class == ErrDoubt {
		other = ErrInvalid
	}
	require.False(t, errors.Is(err, other), "error wraps both classes")
	require.Equal(t, msg, err.Error())
}
