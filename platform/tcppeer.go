package platform

import (
	"errors"
	"fmt"
	"net/netip"
)

// TCPPeer is who serves the far end of a TCP connection to this host, as
// the kernel records it.
type TCPPeer struct {
	// Trusted: root (SYSTEM on Windows) or this process's own user.
	Trusted bool
	// Who names the owner for a message: "uid 65534", or a SID.
	Who string
}

// ErrTCPPeerUnknown is returned where this OS has no record of a local TCP
// socket's owner that this package can read (macOS).
var ErrTCPPeerUnknown = errors.New("who serves a local TCP port cannot be learnt on this OS")

// unmapped is a with an IPv4-mapped IPv6 address as plain IPv4, as the
// kernel's tables list a dual-stack socket's IPv4 peers.
func unmapped(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// errNoSocket: the kernel lists no socket with the connection's addresses
// (the server closed it at once, or it is not on this host).
func errNoSocket(local, remote netip.AddrPort) error {
	return fmt.Errorf("no socket of this host serves %s for our %s", remote, local)
}
