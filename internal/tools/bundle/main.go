// Command bundle appends the embedded hold's image and the lean helper binary
// to the supervisor's binary (internal/helperimage):
// `bundle <supervisor> [<hold image>] <helper>`. The Makefile's build and the
// tests' builds of the supervisor run it; a binary built without it starts its
// helpers and its embedded hold from itself.
package main

import (
	"fmt"
	"os"

	"github.com/octostore-supervisor/supervisor/internal/helperimage"
)

func main() {
	if len(os.Args) != 3 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: bundle <supervisor binary> [<hold image>] <helper binary>")
		os.Exit(64)
	}
	if err := helperimage.AppendFile(os.Args[1], os.Args[2:]...); err != nil {
		fmt.Fprintf(os.Stderr, "bundle: %v\n", err)
		os.Exit(1)
	}
}
