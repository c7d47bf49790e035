//go:build !linux

package main

// cgroupModes is false: cgroups exist only on Linux, and parseArgs refuses
// --migrate-cgroup with exit 64 ("mode not supported on this OS").
const cgroupModes = false

func migrateCgroup() string { return "fail -: " + errUnsupported.Error() }
