//go:build octostore_testhooks

package main

import (
	"strings"
	"syscall"

	"github.com/octostore-supervisor/supervisor/contain"
)

// testHooks, in test builds only, freezes the supervisor with SIGSTOP at the point
// named by OCTOSTORE_SUPERVISOR_TESTHOOK_PAUSE, so a test can hold it exactly there
// and resume it with SIGCONT. Release builds do not contain this code.
func testHooks(cfg *contain.Config, env []string) {
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
		if p == point {
			_ = syscall.Kill(syscall.Getpid(), syscall.SIGSTOP)
		}
	}
}
