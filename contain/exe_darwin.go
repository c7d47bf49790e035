package contain

import "os"

func selfExe() (string, error) { return os.Executable() }

// helperImage is our own binary: macOS has no dumpable flag to inherit
// (task_for_pid already needs entitlements).
func helperImage() (path string, release func(), err error) {
	p, err := selfExe()
	return p, func() {}, err
}
