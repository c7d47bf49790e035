//go:build octostore_noetcd

package holdcli

import (
	"errors"
	"io"

	"github.com/octostore-supervisor/supervisor/hold"
)

// The octostore_noetcd build is the embedded hold's image (cmd/octostore-hold):
// the etcd client (grpc, protobuf) is most of a hold's memory, and only an
// etcd hold needs it. octostore-supervisor runs etcd holds from its own binary,
// so these are never reached there; they fail rather than pretend.
var errNoEtcd = errors.New("this build of the hold has no etcd client (octostore_noetcd); etcd holds run from the octostore-supervisor binary itself")

func etcdServer(string, hold.LookupEnv, hold.Transport) (string, error) { return "", errNoEtcd }

func openEtcd(string, hold.LookupEnv, hold.Transport, io.Writer) (hold.Authority, error) {
	return nil, errNoEtcd
}
