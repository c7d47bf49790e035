package hold

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/octostore-supervisor/supervisor/platform"
)

// UntrustedListener is a loopback port whose server is neither root nor us,
// or whose server cannot be learnt: credentials are never written to it.
// While a loopback port is free (its server down or restarting) any local
// user can listen there and read what arrives.
type UntrustedListener struct {
	Addr string // host:port
	Who  string // the owner, e.g. "uid 65534"; "" when it cannot be learnt
	// Cause is why the owner cannot be learnt, when Who is "".
	Cause error
}

func (e *UntrustedListener) Error() string {
	if e.Who == "" {
		return fmt.Sprintf("who serves %s cannot be learnt (%v)", e.Addr, e.Cause)
	}
	return fmt.Sprintf("%s is served by %s, neither root nor us (uid %d)", e.Addr, e.Who, os.Geteuid())
}

func (e *UntrustedListener) Unwrap() error { return e.Cause }

// VerifyLoopbackPeer returns c when root or we serve its far end, a port of
// this host, and closes it otherwise: it judges the very connection the
// credentials would go on, so nobody can take the port between the check
// and the send.
func VerifyLoopbackPeer(c net.Conn) (net.Conn, error) {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		c.Close()
		return nil, &UntrustedListener{Addr: c.RemoteAddr().String(), Cause: errors.New("not a TCP connection")}
	}
	p, err := platform.LocalTCPPeer(local.AddrPort(), remote.AddrPort())
	if err == nil && p.Trusted {
		return c, nil
	}
	c.Close()
	if err != nil {
		return nil, &UntrustedListener{Addr: remote.String(), Cause: err}
	}
	return nil, &UntrustedListener{Addr: remote.String(), Who: p.Who}
}

// verifiedDial wraps dial so that every connection it makes goes through
// VerifyLoopbackPeer.
func verifiedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return VerifyLoopbackPeer(c)
	}
}

// LoopbackCredentialsRefusal is the usage message for credentials (what:
// "the bearer token", "etcd credentials (…)") refused on a loopback port of
// scheme; instead says what to use.
func LoopbackCredentialsRefusal(what, scheme string, u *UntrustedListener, instead string) string {
	return "refusing to send " + what + " over cleartext " + scheme + ": " + u.Error() +
		", and any local user can listen on a loopback port while its server is down; " + instead +
		", or --allow-cleartext-credentials to accept that"
}
