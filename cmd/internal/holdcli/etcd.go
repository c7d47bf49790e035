//go:build !octostore_noetcd

package holdcli

import (
	"io"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/etcd"
)

// etcdServer is the normalised URL of the etcd cluster raw names. etcd.Open
// parses the URL and checks its files without dialing.
func etcdServer(raw string, env hold.LookupEnv, tr hold.Transport) (string, error) {
	a, err := etcd.Open(raw, env, tr)
	if err != nil {
		return "", err
	}
	defer a.Close()
	return a.Server(), nil
}

// openEtcd opens the etcd authority raw names, its diagnostics to diag.
func openEtcd(raw string, env hold.LookupEnv, tr hold.Transport, diag io.Writer) (hold.Authority, error) {
	a, err := etcd.Open(raw, env, tr)
	if err != nil {
		return nil, err
	}
	if err := a.ProbeLoopbackPeers(); err != nil {
		return nil, err
	}
	// election create and status pass no writer: keep Open's os.Stderr (a
	// nil Diag panics on the first diagnostic, e.g. the old-server warning).
	if diag != nil {
		a.Diag = diag
	}
	return a, nil
}
