//go:build !linux && !darwin

package pidfile

import (
	"errors"
	"fmt"
)

func selfStart() (uint64, error) {
	return 0, fmt.Errorf("pidfile start times need Linux or macOS: %w", errors.ErrUnsupported)
}
