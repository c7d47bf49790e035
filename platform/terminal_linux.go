package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal: a tty answers TCGETS.
func IsTerminal(f *os.File) bool {
	return WithFd(f, func(fd int) error { _, err := unix.IoctlGetTermios(fd, unix.TCGETS); return err }) == nil
}
