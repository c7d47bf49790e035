//go:build !windows

package main

import "os/exec"

// windowsModes is false: --detached, --orphan, --new-group, --breakaway and
// --ignore-console are refused with exit 64 ("mode not supported on this OS").
const windowsModes = false

// roleAttrs has nothing to add outside Windows: the Unix roles change their
// session or group themselves, after the exec.
func roleAttrs(*exec.Cmd, string) {}
