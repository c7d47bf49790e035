package platform

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes orphaned descendants re-parent to this process instead of
// PID 1, so a double-forked daemon stays findable through parent links and its
// zombie is reaped by us rather than lingering where a slow init leaves it.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// SetNonDumpable stops same-user processes (a worker) from ptrace-attaching to us or
// reopening our file descriptors through /proc/PID/fd.
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// SetNoNewPrivs stops the calling thread and everything it later starts from gaining
// privileges through setuid binaries or file capabilities. It is per thread: call it
// on a thread locked with runtime.LockOSThread that then starts the child.
func SetNoNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}
