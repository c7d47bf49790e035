package etcd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// A stale token is retried, not blamed on the credentials: a member that has
// not yet applied the client's authentication refuses its token for a
// moment (seen as an exit 64 "check the user:password" under make test's
// load, against a cluster whose every member had authenticated the user).
func TestFailureCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{rpctypes.ErrInvalidAuthToken, ""},
		{rpctypes.ErrAuthOldRevision, ""},
		{fmt.Errorf("txn: %w", rpctypes.ErrInvalidAuthToken), ""},
		{rpctypes.ErrAuthFailed, codeAuthFailed},
		{rpctypes.ErrUserEmpty, codeAuthFailed},
		{rpctypes.ErrPermissionDenied, codeForbidden},
		{rpctypes.ErrAuthNotEnabled, codeForbidden},
		{errors.New("connection refused"), ""},
	} {
		require.Equal(t, c.want, failureCode(c.err), "%v", c.err)
	}
}
