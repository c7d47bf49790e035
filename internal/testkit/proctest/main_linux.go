package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/octostore-supervisor/supervisor/platform"
)

// Main is the TestMain of a package whose tests start processes; it does not
// return. It makes the test process the child subreaper, so that orphans of
// anything a test starts (daemons, double forks, zombies of a killed parent)
// come back to it instead of to a PID 1 that reaps slowly. It then calls setup
// (if not nil) with a temporary directory that it removes at the end, runs the
// tests, and finally proves for the whole package that nothing the tests
// started is alive, by a Sweep that fails the run if anything survives it.
func Main(m *testing.M, setup func(tmp string) error) {
	os.Exit(runMain(m, setup))
}

func runMain(m *testing.M, setup func(tmp string) error) int {
	if err := platform.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "proctest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if setup != nil {
		if err := setup(tmp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	code := m.Run()
	if left, err := Sweep(10 * time.Second); err != nil || len(left) > 0 {
		fmt.Fprintf(os.Stderr, "survivors after all tests: %s (sweep error: %v)\n", Describe(left), err)
		code = 1
	}
	return code
}

// Build compiles the Go package pkg (a path as `go build` takes it, "." for the
// package under test) into dir, naming the binary after the package's folder.
func Build(dir, pkg string) (Binary, error) {
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(abs))
	cmd := GoBuild("-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return Binary(out), nil
}
