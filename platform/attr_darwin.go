package platform

import "errors"

// ErrNoSubreaper: macOS cannot re-parent orphans to us, so a double-forked daemon
// leaves the tree. The macOS backend (process group + session + tracking) must
// handle that explicitly before the supervisor runs there.
var ErrNoSubreaper = errors.New("macOS has no child subreaper; the macOS containment backend is not available in this build yet")

// BecomeSubreaper is not available on macOS.
func BecomeSubreaper() error { return ErrNoSubreaper }

// SetNonDumpable is a no-op on macOS: task_for_pid already needs entitlements.
func SetNonDumpable() error { return nil }

// SetNoNewPrivs has no macOS equivalent; it is a no-op.
func SetNoNewPrivs() error { return nil }
