//go:build unix

package contain

import (
	"errors"
	"runtime"
	"syscall"
)

// NoNewPrivsUnsupported says why `run --no-new-privs` cannot be honoured here.
func NoNewPrivsUnsupported() error {
	if runtime.GOOS != "linux" {
		return errors.New("no_new_privs exists only on Linux")
	}
	return nil
}

// workerUserUnsupported: every unix can start a program under another user.
func workerUserUnsupported() error { return nil }

// credential is the worker's identity with no supplementary groups (an
// empty, non-nil Groups makes exec call setgroups(0, NULL)).
func credential(u *WorkerUser) *syscall.Credential {
	return &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: []uint32{}}
}
