package contain

import (
	"os"
	"testing"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// helperMainEnv makes the test binary run the helper its argv names
// (HelperMain), as the supervisor's binary does.
const helperMainEnv = "OCTOSTORE_TEST_HELPERMAIN"

// TestMain lets the test binary stand in for a shim's program
// (TestShimClosesOnlyItsOwnDescriptors re-executes it with shimFdProbeEnv)
// or for a helper (helperMainEnv), and otherwise proves at the end that nothing contain's tests started is
// still alive (proctest.Main).
func TestMain(m *testing.M) {
	if os.Getenv(shimFdProbeEnv) != "" {
		os.Exit(shimFdProbe())
	}
	if os.Getenv(helperMainEnv) != "" {
		code, ok := HelperMain(os.Args)
		if !ok {
			code = ExitUsage
		}
		os.Exit(code)
	}
	proctest.Main(m, nil)
}
