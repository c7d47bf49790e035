// Command octostore is the OctoStore hold client: `election create|hold|status|watch`
// and `lock hold|status|watch`, against a hosted or self-hosted OctoStore server
// or the host-local authority (--server local). The command line lives in
// cmd/internal/holdcli, so octostore-supervisor can run the same client as its
// embedded hold.
//
// A command, not a library: its flags, output and exit codes (README.md,
// docs/usage.md) are its interface; it exports no Go API.
package main

import (
	"os"

	"github.com/octostore-supervisor/supervisor/cmd/internal/holdcli"
)

// version is stamped by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	os.Exit(holdcli.Main(version, os.Args, os.LookupEnv, holdcli.Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}
