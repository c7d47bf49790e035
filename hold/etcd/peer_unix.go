//go:build linux || darwin

package etcd

import "net"

// peerUID is the uid of the process serving the other end of c, as the
// kernel recorded it when that process listened (socketPeerUID).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var uid int
	var gerr error
	if err := raw.Control(func(fd uintptr) { uid, gerr = socketPeerUID(int(fd)) }); err != nil {
		return 0, err
	}
	return uid, gerr
}
