//go:build !linux

package main

// insideModes is false: --inside and --reach read Linux's /proc, and
// parseArgs refuses them with exit 64 ("mode not supported on this OS").
const insideModes = false

func inside(string) { die("--inside: %v", errUnsupported) }
func reach(string)  { die("--reach: %v", errUnsupported) }
