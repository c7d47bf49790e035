//go:build !linux

package main

// leaderModes is false: parseArgs refuses --leader-exit with exit 64. On macOS
// a process turns zombie only once its last thread has gone, and Windows has
// no such state.
const leaderModes = false

func leaveLeaderThread(string) { die("leader-exit: %v", errUnsupported) }
