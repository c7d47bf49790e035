package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
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

// refusedPeers says which unix-socket members peerCheckedDial refuses, for
// an error that would otherwise say only that no member answered in time
// (gRPC keeps a dialer's reason to itself); "" when none is.
func (t target) refusedPeers() string {
	if !t.unix {
		return ""
	}
	var why []string
	for _, p := range t.endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), attemptCap)
		c, err := peerCheckedDial(ctx, "unix://"+p)
		cancel()
		if c != nil {
			c.Close()
		}
		var refused *refusedPeer
		if errors.As(err, &refused) {
			why = append(why, refused.Error())
		}
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
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
