package etcd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/octostore-supervisor/supervisor/hold"
)

// minimumPatch is the lowest accepted patch release per minor of 3.x
// (old-leader revoke and renewal fixes); minors not listed and below 3.4 are
// refused, above 3.6 accepted.
var minimumPatch = map[int]int{4: 31, 5: 13, 6: 0}

// versionOK reports whether v ("3.5.21") is at or above the floor.
func versionOK(v string) (bool, error) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 {
		return false, fmt.Errorf("unreadable etcd version %q", v)
	}
	var n [3]int
	for i, p := range parts {
		p, _, _ = strings.Cut(p, "-")
		x, err := strconv.Atoi(p)
		if err != nil {
			return false, fmt.Errorf("unreadable etcd version %q", v)
		}
		n[i] = x
	}
	switch {
	case n[0] != 3:
		return n[0] > 3, nil
	case n[1] > 6:
		return true, nil
	}
	floor, ok := minimumPatch[n[1]]
	return ok && n[2] >= floor, nil
}

// errOldServer is a server below the floor without the override; it reaches
// callers inside a *hold.UsageError (exit 64).
type errOldServer struct{ endpoint, version string }

func (e errOldServer) Error() string {
	return fmt.Sprintf("etcd member %s runs %s, below the supported floor (3.4.31, 3.5.13, 3.6.0; 3.5.23/3.6.5 recommended): upgrade etcd (%s=1 overrides, for tests only)",
		e.endpoint, e.version, envAllowOldServer)
}

// checkVersion connects and reads every reachable member's version once per
// Authority; every operation starts with it.
// Unreachable members are skipped; with none reachable the check is
// repeated at the next call. The override is announced on diag once.
func (a *Authority) checkVersion(ctx context.Context, diag io.Writer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.checked {
		return nil
	}
	if err := a.connect(); err != nil {
		return err
	}
	var lastErr error
	seen, warned := 0, false
	for _, ep := range a.t.clientEndpoints() {
		cctx, cancel := callContext(ctx, attemptCap)
		st, err := a.client.Status(cctx, ep)
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		seen++
		ok, err := versionOK(st.Version)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if !a.allowOld {
			old := errOldServer{ep, st.Version}
			return &hold.UsageError{Msg: old.Error(), Class: hold.ErrInvalidServerURL, Cause: old}
		}
		if warned {
			continue
		}
		warned = true
		a.diagf(diag, "etcd member %s runs %s, below the supported floor; continuing because %s=1 (tests only)", ep, st.Version, envAllowOldServer)
	}
	if seen == 0 {
		return fmt.Errorf("no etcd member answered: %w", lastErr)
	}
	a.checked = true
	return nil
}
