package contain

import (
	"os"
	"testing"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// TestMain lets the test binary stand in for a shim's program
// (TestShimClosesOnlyItsOwnDescriptors re-executes it with shimFdProbeEnv),
// and otherwise proves at the end that nothing contain's tests started is
// still alive (proctest.Main).
func TestMain(m *testing.M) {
	if os.Getenv(shimFdProbeEnv) != "" {
		os.Exit(shimFdProbe())
	}
	proctest.Main(m, nil)
}
