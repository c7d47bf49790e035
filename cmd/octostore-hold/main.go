// Command octostore-hold is the image octostore-supervisor's guardian starts
// the embedded hold from when its authority is not etcd: the hold client
// built with the octostore_noetcd tag, so without grpc, protobuf and the etcd
// client, whose package initialisation and data are most of a hold's memory
// (docs/benchmarks.md). `make build` bundles it with the supervisor's binary
// (internal/helperimage); it is never installed or run on its own.
package main

import (
	"fmt"
	"os"

	"github.com/octostore-supervisor/supervisor/cmd/internal/holdroot"
	"github.com/octostore-supervisor/supervisor/contain"
)

// version is stamped by the Makefile, the supervisor's own.
var version = "dev"

func main() {
	if code, ok := holdroot.Main(version, os.Args); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "octostore-hold: internal to octostore-supervisor, which starts it; it has no command line")
	os.Exit(contain.ExitUsage)
}
