package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/hold"
)

// attemptCap bounds one call: a stopped member keeps receiving about a third
// of the calls until gRPC's keepalive notices, so short attempts with retries
// beat one long one.
const attemptCap = time.Second

// callContext is every etcd call's context (invariant 5): no longer than
// limit and refused by a member that has no leader, so a partitioned member
// cannot answer from stale state.
func callContext(parent context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, max(limit, 0))
	return clientv3.WithRequireLeader(ctx), cancel
}

// answer is one bounded call's result.
type answer[T any] struct {
	o   hold.Outcome
	v   T
	err error // the call's error when o == hold.Done
}

// call runs op through hold.Await, bounded by d (and by attemptCap per
// attempt), so neither a hung member nor a suspend can stretch a budget.
// With watch, a signal or the run's context abandons the call. The error
// return is a clock failure only (exit 70).
func call[T any](w *hold.Waiter, d hold.Deadline, watch bool, op func(context.Context) (T, error)) (answer[T], error) {
	type result struct {
		v   T
		err error
	}
	o, res, err := hold.Await(w, d, watch, nil, func(ctx context.Context) result {
		rem, err := d.Remaining(w.Clock)
		if err != nil {
			return result{err: err}
		}
		cctx, cancel := callContext(ctx, min(rem, attemptCap))
		defer cancel()
		v, err := op(cctx)
		return result{v, err}
	})
	if err != nil {
		return answer[T]{}, err
	}
	return answer[T]{o: o, v: res.v, err: res.err}, nil
}

// Failure codes of etcd errors in events (the HTTP authority's stable codes).
const (
	codeAuthFailed = "authentication_failed"
	codeForbidden  = "forbidden"
)

// failureCode classifies an etcd error: "" means transient (retry); anything
// else ends a hold before authority with exit 64 (the caller must fix
// credentials or permissions). A token the answering member does not know
// (ErrInvalidAuthToken) or one issued before the auth store last changed
// (ErrAuthOldRevision) says nothing against the credentials: etcd hands a new
// token to every member through raft, so a member a moment behind refuses it,
// and the client authenticates again on the next attempt. Wrong credentials
// are ErrAuthFailed.
func failureCode(err error) string {
	switch {
	case errors.Is(err, rpctypes.ErrInvalidAuthToken), errors.Is(err, rpctypes.ErrAuthOldRevision):
		return ""
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrUserEmpty):
		return codeAuthFailed
	case errors.Is(err, rpctypes.ErrPermissionDenied), errors.Is(err, rpctypes.ErrAuthNotEnabled):
		return codeForbidden
	}
	return ""
}
