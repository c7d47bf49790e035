//go:build !linux && !windows

package platform

import "net/netip"

// LocalTCPPeer: macOS keeps a socket's owner out of reach of an unprivileged
// process (proc_pidfdinfo needs the owner's pid, found only by scanning every
// process's descriptors), so the owner stays unknown here.
func LocalTCPPeer(_, _ netip.AddrPort) (TCPPeer, error) { return TCPPeer{}, ErrTCPPeerUnknown }
