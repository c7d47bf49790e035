//go:build unix && !linux && !darwin

package local

import "os"

// checkReliableLocks fails closed where we have no way to tell a network file
// system from a local one.
func checkReliableLocks(_ *os.File, dir string) error {
	return stateDirError("cannot verify that %s supports reliable file locks on this operating system; refusing it", dir)
}
