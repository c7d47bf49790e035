package platform

// BecomeSubreaper succeeds without effect: macOS has no child subreaper, so an
// orphan re-parents to launchd (pid 1) and leaves our parent chain. The shared
// Unix lifecycle calls this at start; the macOS backend makes up for it by
// following process groups, sessions and every process it has seen in a group
// (contain's process families), and doctor and every containment report state
// what it still cannot follow.
func BecomeSubreaper() error { return nil }

// SetNonDumpable is a no-op on macOS: task_for_pid already needs entitlements.
func SetNonDumpable() error { return nil }

// SetNoNewPrivs has no macOS equivalent; it is a no-op.
func SetNoNewPrivs() error { return nil }

// HasCapSysAdmin is false: macOS has no capabilities, and no Landlock that
// would ask for one.
func HasCapSysAdmin() bool { return false }

// CloexecFrom marks every descriptor from first up close-on-exec, so that
// nothing this process starts inherits a descriptor it was not handed
// explicitly. macOS has no close_range: /dev/fd lists them.
func CloexecFrom(first int) error { return cloexecListed("/dev/fd", first) }
