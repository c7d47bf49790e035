//go:build unix

package holdroot

import (
	"io"
	"os"

	"github.com/octostore-supervisor/supervisor/cmd/internal/holdcli"
	"github.com/octostore-supervisor/supervisor/contain"
)

// Main runs the embedded hold as the root of its group when args (os.Args)
// ask for it; version is the binary's, as the hold client reports it.
func Main(version string, args []string) (int, bool) {
	if len(args) < 2 || args[1] != contain.HoldRootArg {
		return 0, false
	}
	return contain.HoldRootMain(func(stdin io.Reader, stdout, stderr io.Writer) int {
		hold := append([]string{"octostore"}, args[2:]...)
		return holdcli.Main(version, hold, os.LookupEnv, holdcli.Streams{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}), true
}
