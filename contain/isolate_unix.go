//go:build unix

package contain

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"github.com/octostore-supervisor/supervisor/platform"
)

// NoNewPrivsUnsupported says why `run --no-new-privs` cannot be honoured here.
func NoNewPrivsUnsupported() error {
	if runtime.GOOS != "linux" {
		return errors.New("no_new_privs exists only on Linux")
	}
	return nil
}

// RestrictsWithoutNoNewPrivs says whether the worker's Landlock scope and
// fence can be applied without no_new_privs: only with CAP_SYS_ADMIN, which
// an unprivileged supervisor and root in a container lack.
func RestrictsWithoutNoNewPrivs() bool { return platform.HasCapSysAdmin() }

// readyForLandlock lets the calling thread restrict itself with Landlock: it
// sets no_new_privs where that needs it (RestrictsWithoutNoNewPrivs), and
// says whether it did.
func readyForLandlock() (underNoNewPrivs bool, err error) {
	if RestrictsWithoutNoNewPrivs() {
		return false, nil
	}
	return true, platform.SetNoNewPrivs()
}

// workerScope decides Isolation.Scope: on, where the kernel has Landlock
// scopes and the user did not opt out; else off, and why.
func workerScope(optOut bool) (bool, string) {
	abi := platform.LandlockABI()
	switch {
	case optOut:
		return false, "--no-worker-scope"
	case runtime.GOOS != "linux":
		return false, "Landlock exists only on Linux"
	case abi < platform.LandlockScopeABI:
		return false, fmt.Sprintf("this kernel's Landlock ABI is %d; scopes need %d, Linux 6.12", abi, platform.LandlockScopeABI)
	}
	return true, ""
}

// fenceOffered decides Isolation.Fence: on, where the kernel has Landlock
// file rules that can grant renames (platform.LandlockFileRulesABI) and the
// user did not opt out; else off, and why. macOS has no cgroups to fence.
func fenceOffered(optOut bool) (bool, string) {
	abi := platform.LandlockABI()
	switch {
	case runtime.GOOS != "linux":
		return false, ""
	case optOut:
		return false, "--no-worker-scope"
	case abi < platform.LandlockFileRulesABI:
		return false, fmt.Sprintf("this kernel's Landlock ABI is %d; the file rules need %d, Linux 5.19", abi, platform.LandlockFileRulesABI)
	}
	return true, ""
}

// workerUserUnsupported: every unix can start a program under another user.
func workerUserUnsupported() error { return nil }

// credential is the worker's identity with no supplementary groups (an
// empty, non-nil Groups makes exec call setgroups(0, NULL)).
func credential(u *WorkerUser) *syscall.Credential {
	return &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: []uint32{}}
}
