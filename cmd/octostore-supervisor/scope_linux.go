package main

import (
	"context"
	"time"

	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/platform/systemd"
)

// scopeTimeout bounds a request to the service manager: it answers in
// milliseconds, and a manager that does not answer is no manager to rely on.
const scopeTimeout = 10 * time.Second

// systemdScope asks systemd for its scope delegated to supervisors
// (contain.ScopeFunc). It lives here, in the supervisor's full binary, and not
// in contain: the helper images link contain and need no D-Bus client.
func systemdScope() contain.ScopeFunc {
	return func(join bool) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
		defer cancel()
		if join {
			return systemd.Join(ctx, contain.SupervisorLeaf)
		}
		return systemd.Find(ctx)
	}
}
