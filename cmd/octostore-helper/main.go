// Command octostore-helper is the image octostore-supervisor starts its
// guardian and shims from: the containment code alone, without the hold, the
// authorities' clients or the command line. `make build` appends it to the
// supervisor's binary (internal/helperimage); it is never installed or run on
// its own. Linking only what a helper runs makes each helper start in about a
// third of the time and with less memory (docs/benchmarks.md,
// "What we tried, and what we kept").
package main

import (
	"fmt"
	"os"

	"github.com/octostore-supervisor/supervisor/contain"
)

func main() {
	if code, ok := contain.HelperMain(os.Args); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "octostore-helper: internal to octostore-supervisor, which starts it; it has no command line")
	os.Exit(contain.ExitUsage)
}
