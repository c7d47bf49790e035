//go:build octostore_testhooks && linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/octostore-supervisor/supervisor/contain"
)

// testHooks, in test builds only, freezes the supervisor with SIGSTOP at the point
// named by OCTOSTORE_SUPERVISOR_TESTHOOK_PAUSE, so a test can hold it exactly there
// and resume it with SIGCONT. Release builds do not contain this code.
func testHooks(cfg *contain.Config, env []string) {
	testHostScope(cfg, env)
	var point string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "OCTOSTORE_SUPERVISOR_TESTHOOK_PAUSE="); ok {
			point = v
		}
	}
	if point == "" {
		return
	}
	cfg.Pause = func(p string) {
		if p != point {
			return
		}
		fmt.Fprintf(os.Stderr, "testhook: pausing at %s\n", p)
		// The stop is sent to this thread, not the process: a process-directed
		// SIGSTOP is taken by whichever thread the kernel picks, and the calling
		// thread runs on (measured: 360 us, long enough to print the terminal
		// line) until an IPI reaches it. A thread-directed one stops the caller on
		// its way out of tgkill, and the group stop follows.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
	}
}

// testBackendHook, in test builds only, forces the join helper that programs use
// to enter their cgroup where clone3 is refused (OCTOSTORE_SUPERVISOR_TESTHOOK_JOIN=1),
// so the fallback is exercised on hosts whose kernel allows clone3.
func testBackendHook(b *contain.Backend) {
	if os.Getenv("OCTOSTORE_SUPERVISOR_TESTHOOK_JOIN") == "1" && b.Name == contain.BackendCgroup {
		b.Join = true
	}
}

// testHostScope, in test builds only, keeps an explicit hold's interlock
// within its private state directory, as it was before the interlock's name
// became host-wide (Config.HostKey): the suite runs hundreds of explicit
// holds of the room "room" at once, each in a directory of its own, which
// would otherwise all wait for one another. A test of the host-wide name sets
// OCTOSTORE_SUPERVISOR_TESTHOOK_HOST_WIDE=1.
func testHostScope(cfg *contain.Config, env []string) {
	if cfg.EmbeddedHold || cfg.Survivors == nil || slices.Contains(env, "OCTOSTORE_SUPERVISOR_TESTHOOK_HOST_WIDE=1") {
		return
	}
	cfg.HostKey += "\x00" + filepath.Dir(cfg.Survivors.Path())
}
