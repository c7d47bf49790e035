//go:build !linux && !darwin && !windows

package platform

import "errors"

// ContinuousMillis fails on systems where we know no suspend-inclusive clock: an
// authority budget must never be measured on a clock that stops during suspend.
func ContinuousMillis() (int64, error) {
	return 0, errors.New("no suspend-inclusive continuous clock on this operating system")
}
