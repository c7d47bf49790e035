//go:build !linux && !darwin && !windows

package pidfile

import (
	"errors"
	"fmt"
)

func selfStart() (uint64, error) {
	return 0, fmt.Errorf("pidfile start times need Linux, macOS or Windows: %w", errors.ErrUnsupported)
}
