//go:build !linux

package platform

import "os"

// OpenHostLock returns nil: only Linux has an abstract socket namespace. On
// Windows an open file cannot be deleted or replaced while the interlock holds
// it; on macOS a same-user worker that unlinks the interlock file defeats it
// (docs/threat-model.md), which --worker-user prevents.
func OpenHostLock() (*os.File, error) { return nil, nil }

// TryHostLock always succeeds where OpenHostLock gives no socket.
func TryHostLock(*os.File, string) (bool, error) { return true, nil }

// HostLockHolder knows no holder where there is no host lock to hold.
func HostLockHolder(string) (uid int, known bool, err error) { return 0, false, nil }
