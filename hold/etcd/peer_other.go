//go:build !linux && !darwin

package etcd

import (
	"errors"
	"net"
)

// peerUID: this platform does not say who serves a unix socket, so no
// etcd+unix:// member is trusted with anything.
func peerUID(*net.UnixConn) (int, error) {
	return 0, errors.New("this platform cannot tell who serves a unix socket (etcd+unix:// needs Linux or macOS)")
}
