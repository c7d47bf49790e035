//go:build !linux

package contain

import (
	"errors"
	"io"
	"os"
	"time"
)

// Cgroups exist only on Linux; ResolveBackend never selects them elsewhere, so
// these are never reached. They keep the guardian's code free of build switches.
type leaf struct{ dir string }

type cgroupRun struct {
	leaves  map[string]*leaf
	markErr error
}

var errNoCgroups = errors.New("cgroups need Linux")

func createRun(Backend, string, []string) (*cgroupRun, error) { return nil, errNoCgroups }
func (l *leaf) open() (*os.File, error)                       { return nil, errNoCgroups }
func (l *leaf) members() []int                                { return nil }
func (l *leaf) killAndWait(time.Duration) ([]int, bool, error) {
	return nil, false, errNoCgroups
}
func (l *leaf) stats(*Report)         {}
func (r *cgroupRun) remove(io.Writer) {}
func removeDir(string) error          { return errNoCgroups }
func killRun(Backend, string, time.Duration) ([]int, bool, error) {
	return nil, false, errNoCgroups
}
func removeRun(Backend, string, io.Writer) {}

// sweepRuns has nothing to sweep without cgroups.
func sweepRuns(Backend, sweepMode, time.Duration) ([]StaleRun, error) { return nil, nil }
