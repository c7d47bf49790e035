package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/octostore-supervisor/supervisor/hold"
)

// peerCheckedDial connects to an etcd+unix:// member and hands the
// connection to the client only when the process serving the socket runs as
// root or as us. Anyone may create a socket where a path is free - in a
// shared directory, or at a member's path while it is down - and whoever
// serves it gets the credentials and every key, and answers for the
// authority; the kernel's record of the server's uid cannot be forged.
func peerCheckedDial(ctx context.Context, addr string) (net.Conn, error) {
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return nil, fmt.Errorf("etcd+unix member %q: not a unix socket address", addr)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(c.(*net.UnixConn), path); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// verifiedTCPDial connects to an etcd:// loopback member and hands the
// connection to the client only when root or we serve its port
// (hold.VerifyLoopbackPeer): the credentials go on no other.
func verifiedTCPDial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return hold.VerifyLoopbackPeer(c)
}

// dialChecked is the checked dialer for t's members; nil when t's members
// are not checked.
func (t target) dialChecked() func(context.Context, string) (net.Conn, error) {
	switch {
	case t.unix:
		return func(ctx context.Context, p string) (net.Conn, error) { return peerCheckedDial(ctx, "unix://"+p) }
	case t.verify:
		return verifiedTCPDial
	}
	return nil
}

// refusedPeers says which members the checked dialers refuse, for an error
// that would otherwise say only that no member answered in time (gRPC keeps
// a dialer's reason to itself); "" when none is.
func (t target) refusedPeers() string {
	why := t.refusals()
	if len(why) == 0 {
		return ""
	}
	msgs := make([]string, len(why))
	for i, e := range why {
		msgs[i] = e.Error()
	}
	return " (" + strings.Join(msgs, "; ") + ")"
}

// refusals dials each member once through the checked dialer and returns
// the refusals (*refusedPeer, *hold.UntrustedListener).
func (t target) refusals() []error {
	dial := t.dialChecked()
	if dial == nil {
		return nil
	}
	var why []error
	for _, ep := range t.endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), attemptCap)
		c, err := dial(ctx, ep)
		cancel()
		if c != nil {
			c.Close()
		}
		var refused *refusedPeer
		var untrusted *hold.UntrustedListener
		if errors.As(err, &refused) || errors.As(err, &untrusted) {
			why = append(why, err)
		}
	}
	return why
}

// ProbeLoopbackPeers refuses, as a usage error before anything starts, a
// cluster one of whose etcd:// loopback members is served by another user,
// when credentials would go to it; members nobody serves are the hold's to
// meet. Every connection is checked again when it is made.
func (a *Authority) ProbeLoopbackPeers() error {
	if !a.t.verify {
		return nil
	}
	for _, err := range a.t.refusals() {
		var u *hold.UntrustedListener
		if errors.As(err, &u) {
			return &hold.UsageError{Msg: hold.LoopbackCredentialsRefusal("etcd credentials ("+envTokenFile+")", "etcd://", u,
				"use etcds:// (TLS), etcd+unix:// (a unix socket served by root or by us)"), Class: hold.ErrCleartextCapability}
		}
	}
	return nil
}

// checkPeer refuses a unix socket served by another user than root or us.
func checkPeer(c *net.UnixConn, path string) error {
	uid, err := peerUID(c)
	if err != nil {
		return fmt.Errorf("etcd member %s: who serves it: %w", path, err)
	}
	if uid != 0 && uid != os.Geteuid() {
		return &refusedPeer{path: path, uid: uid}
	}
	return nil
}

// refusedPeer is a unix-socket member served by another user.
type refusedPeer struct {
	path string
	uid  int
}

func (e *refusedPeer) Error() string {
	return fmt.Sprintf("refusing etcd member %s: its socket is served by uid %d, neither root nor us (uid %d)", e.path, e.uid, os.Geteuid())
}
