//go:build !linux

package contain

// systemdHost: systemd runs only on Linux, so no user has its service
// manager here (usermanager.go).
func systemdHost() bool { return false }
