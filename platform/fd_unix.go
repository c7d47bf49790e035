//go:build unix

package platform

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cloexecListed marks every descriptor from first up that dir (the process's
// own descriptor directory) lists close-on-exec. The directory's own
// descriptor is among them, which does no harm.
func cloexecListed(dir string, first int) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < first {
			continue
		}
		unix.CloseOnExec(fd)
	}
	return nil
}
