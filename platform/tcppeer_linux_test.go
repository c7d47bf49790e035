package platform

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// listenAs listens on network/addr with a socket owned by uid: a socket's
// owner is the file-system uid of the thread that makes it, so a locked
// thread takes uid for the one call and gives it back.
func listenAs(t *testing.T, uid int, network, addr string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsuid(uid)
	ln, err := net.Listen(network, addr)
	unix.Setfsuid(os.Geteuid())
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

func peerOf(t *testing.T, network string, ln net.Listener) (TCPPeer, error) {
	t.Helper()
	c, err := net.Dial(network, ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	return LocalTCPPeer(c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort())
}

// The kernel names the owner of the server's end of our very connection,
// over IPv4, IPv6 and an IPv4 connection to a dual-stack listener, whether
// or not the server accepted it yet.
func TestLocalTCPPeer(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "the test makes sockets owned by another uid: run it as root (CI does)")
	const other = 65534
	for _, c := range []struct{ listen, listenAddr, dial string }{
		{"tcp4", "127.0.0.1:0", "tcp4"},
		{"tcp6", "[::1]:0", "tcp6"},
		{"tcp", "[::]:0", "tcp4"}, // dual stack: the server's end is in tcp6, v4-mapped
	} {
		t.Run(c.listenAddr+"/ours", func(t *testing.T) {
			ln := listenAs(t, os.Geteuid(), c.listen, c.listenAddr)
			p, err := peerOf(t, c.dial, loopbackOf(ln, c.dial))
			require.NoError(t, err)
			require.Equal(t, TCPPeer{Trusted: true, Who: "uid 0"}, p)
		})
		t.Run(c.listenAddr+"/another user's", func(t *testing.T) {
			ln := listenAs(t, other, c.listen, c.listenAddr)
			p, err := peerOf(t, c.dial, loopbackOf(ln, c.dial))
			require.NoError(t, err)
			require.Equal(t, TCPPeer{Trusted: false, Who: "uid " + strconv.Itoa(other)}, p)
		})
	}
}

// loopbackOf is ln as a loopback address dialable over network.
func loopbackOf(ln net.Listener, network string) net.Listener {
	port := ln.Addr().(*net.TCPAddr).Port
	host := "127.0.0.1"
	if network == "tcp6" {
		host = "::1"
	}
	return fixedAddr{ln, &net.TCPAddr{IP: net.ParseIP(host), Port: port}}
}

type fixedAddr struct {
	net.Listener
	addr net.Addr
}

func (f fixedAddr) Addr() net.Addr { return f.addr }

// A connection the kernel does not list (the addresses of no socket here) is
// an error, never "trusted".
func TestLocalTCPPeerUnknownConnection(t *testing.T) {
	_, err := LocalTCPPeer(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	require.ErrorContains(t, err, "no socket of this host serves 127.0.0.1:2")
}

func TestProcAddr(t *testing.T) {
	a, err := procAddr("0100007F:1F90")
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddrPort("127.0.0.1:8080"), a)
	a, err = procAddr("00000000000000000000000001000000:0050")
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddrPort("[::1]:80"), a)
	a, err = procAddr("0000000000000000FFFF00000100007F:0050")
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddrPort("127.0.0.1:80"), a, "v4-mapped, unmapped")
}
