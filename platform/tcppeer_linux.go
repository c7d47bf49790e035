package platform

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// LocalTCPPeer says who serves remote, the far end of our TCP connection from
// local, both addresses of this host. The kernel lists the server's end of
// the connection in /proc/net/tcp (tcp6 for IPv6 and for an IPv4 connection
// accepted on a dual-stack socket) with the uid of the socket's owner: an
// accepted socket carries its listener's. Both ends are named, so it is this
// very connection's, whether or not the server has accepted it yet.
//
// Read by hand: gopsutil's connection list maps every process's descriptors
// first, a scan of all of /proc per connection. sock_diag would look the
// socket up by its addresses instead of listing them all, but needs a
// netlink library for one call; the list costs about 3 ms a connection with
// 500 sockets (measured on a loaded CI machine), and a hold keeps its
// connections alive.
func LocalTCPPeer(local, remote netip.AddrPort) (TCPPeer, error) {
	local, remote = unmapped(local), unmapped(remote)
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := socketOwner(file, remote, local)
		if err != nil {
			return TCPPeer{}, err
		}
		if found {
			return TCPPeer{Trusted: uid == 0 || uid == os.Geteuid(), Who: "uid " + strconv.Itoa(uid)}, nil
		}
	}
	return TCPPeer{}, errNoSocket(local, remote)
}

// socketOwner finds the socket whose local address is local and remote
// address remote in a /proc/net/tcp-style file and returns its uid.
func socketOwner(file string, local, remote netip.AddrPort) (uid int, found bool, err error) {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return 0, false, nil // no IPv6 in this kernel
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		l, err1 := procAddr(fields[1])
		r, err2 := procAddr(fields[2])
		if err1 != nil || err2 != nil {
			return 0, false, fmt.Errorf("%s: unreadable line %q", file, sc.Text())
		}
		if l == local && r == remote {
			uid, err := strconv.Atoi(fields[7])
			return uid, err == nil, err
		}
	}
	return 0, false, sc.Err()
}

// procAddr decodes "0100007F:1F90": the address as the kernel prints it, each
// 32-bit word of it in this host's byte order, and the port.
func procAddr(s string) (netip.AddrPort, error) {
	addr, port, ok := strings.Cut(s, ":")
	p, err := strconv.ParseUint(port, 16, 16)
	if !ok || err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(addr)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}
