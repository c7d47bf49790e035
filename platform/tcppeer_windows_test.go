package platform

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The TCP table names the process serving the far end of our connection
// (this one), and its token our own user: trusted. Wine 8 lists the row
// without its process: then the error says so, and a caller refuses naming
// it.
func TestLocalTCPPeer(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "tcp6" {
				addr = "[::1]:0"
			}
			ln, err := net.Listen(network, addr)
			require.NoError(t, err)
			defer ln.Close()
			go func() {
				if s, err := ln.Accept(); err == nil {
					defer s.Close()
					_, _ = s.Read(make([]byte, 1)) // until the client closes
				}
			}()
			c, err := net.Dial(network, ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			p, err := LocalTCPPeer(c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort())
			if wine, under := WineVersion(); under && err != nil {
				require.ErrorContains(t, err, "the TCP table names no process serving "+ln.Addr().String()+" (pid 0)")
				t.Logf("under Wine %s: %v", wine, err)
				return
			}
			require.NoError(t, err)
			require.True(t, p.Trusted, p.Who)
			require.True(t, strings.HasPrefix(p.Who, "user S-1-"), p.Who)
		})
	}
}

// A connection the table does not list is an error, never "trusted".
func TestLocalTCPPeerUnknownConnection(t *testing.T) {
	_, err := LocalTCPPeer(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	require.ErrorContains(t, err, "no socket of this host serves 127.0.0.1:2")
}
