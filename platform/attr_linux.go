package platform

import (
	"errors"
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

// HasCapSysAdmin says whether CAP_SYS_ADMIN is in the calling thread's
// effective set. Landlock lets a thread restrict itself without
// no_new_privs only then; root in a container started by Docker, Podman or
// Kubernetes lacks it.
func HasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
}

// CloexecFrom marks every descriptor from first up close-on-exec, so that
// nothing this process starts inherits a descriptor it was not handed
// explicitly (a caller's `7>secret` included). Descriptors the process still
// uses stay open; exec's dup2 of an explicitly passed one clears the flag on
// the copy only.
func CloexecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		// Before Linux 5.11 (or under a seccomp filter that refuses it).
		return cloexecListed("/proc/self/fd", first)
	}
	if err != nil {
		return fmt.Errorf("close_range(%d, ~0, CLOSE_RANGE_CLOEXEC): %w", first, err)
	}
	return nil
}
