package platform

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LandlockScopeABI is the first Landlock ABI with scopes: a domain that may
// signal, and connect to abstract unix sockets of, only processes in itself
// or in domains nested in it (Linux 6.12).
const LandlockScopeABI = 6

// LandlockABI returns the kernel's Landlock ABI version; 0 where the kernel
// has no Landlock or it is disabled.
func LandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// scopeAttr is the start of struct landlock_ruleset_attr that ABI 6 knows:
// handled_access_fs, handled_access_net, scoped. Passing only these keeps
// the call valid whatever fields later ABIs add behind them.
type scopeAttr struct {
	handledFS, handledNet, scoped uint64
}

// ScopeThread puts the calling thread, and every process it starts from then
// on, in a Landlock domain that scopes signals and abstract unix sockets:
// from inside, kill(2) (kill(-1) included) and connect(2) to an abstract
// socket reach only processes of the same domain or one nested in it, and,
// as for every Landlock domain, ptrace and /proc access to processes outside
// it are refused. It restricts no file or network access. Without
// CAP_SYS_ADMIN the kernel requires no_new_privs on the thread first, which
// is the caller's to set (SetNoNewPrivs). The thread cannot leave the
// domain: call it on a thread that is thrown away (runtime.LockOSThread).
func ScopeThread() error {
	attr := scopeAttr{scoped: unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}
