package platform

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/windows"
)

// x/sys/windows has no GetExtendedTcpTable (read at v0.50.0).
var procGetExtendedTcpTable = windows.NewLazySystemDLL("iphlpapi.dll").NewProc("GetExtendedTcpTable")

// tcpTableOwnerPidAll: every TCP row with its owning process.
const tcpTableOwnerPidAll = 5

type tcpRowOwnerPid struct {
	State, LocalAddr, LocalPort, RemoteAddr, RemotePort, OwningPid uint32
}

type tcp6RowOwnerPid struct {
	LocalAddr     [16]byte
	LocalScopeID  uint32
	LocalPort     uint32
	RemoteAddr    [16]byte
	RemoteScopeID uint32
	RemotePort    uint32
	State         uint32
	OwningPid     uint32
}

// LocalTCPPeer says who serves remote, the far end of our TCP connection from
// local, both addresses of this host: the TCP table names the process that
// owns the server's end of this very connection, and its token the user.
// Trusted is SYSTEM or our own user.
func LocalTCPPeer(local, remote netip.AddrPort) (TCPPeer, error) {
	local, remote = unmapped(local), unmapped(remote)
	pid, err := tcpOwnerPid(remote, local)
	if err != nil {
		return TCPPeer{}, err
	}
	if pid == 0 { // Wine 8 lists loopback connections without their process
		return TCPPeer{}, fmt.Errorf("the TCP table names no process serving %s (pid 0)", remote)
	}
	sid, err := processUser(pid)
	if err != nil {
		return TCPPeer{}, fmt.Errorf("the user of process %d, which serves %s: %w", pid, remote, err)
	}
	ours, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return TCPPeer{}, fmt.Errorf("our own user: %w", err)
	}
	trusted := sid.Equals(ours.User.Sid) || sid.IsWellKnown(windows.WinLocalSystemSid)
	return TCPPeer{Trusted: trusted, Who: "user " + sid.String() + fmt.Sprintf(" (process %d)", pid)}, nil
}

// tcpOwnerPid finds the row whose local address is local and remote address
// remote and returns its owning process.
func tcpOwnerPid(local, remote netip.AddrPort) (uint32, error) {
	family := uint32(windows.AF_INET)
	if local.Addr().Is6() {
		family = windows.AF_INET6
	}
	buf, err := tcpTable(family)
	if err != nil {
		return 0, err
	}
	n := binary.LittleEndian.Uint32(buf)
	for i := uint32(0); i < n; i++ {
		var l, r netip.AddrPort
		var pid uint32
		if family == windows.AF_INET {
			row := (*tcpRowOwnerPid)(unsafe.Pointer(&buf[4+uintptr(i)*unsafe.Sizeof(tcpRowOwnerPid{})]))
			l, r, pid = v4(row.LocalAddr, row.LocalPort), v4(row.RemoteAddr, row.RemotePort), row.OwningPid
		} else {
			row := (*tcp6RowOwnerPid)(unsafe.Pointer(&buf[4+uintptr(i)*unsafe.Sizeof(tcp6RowOwnerPid{})]))
			l = netip.AddrPortFrom(netip.AddrFrom16(row.LocalAddr).Unmap(), port(row.LocalPort))
			r = netip.AddrPortFrom(netip.AddrFrom16(row.RemoteAddr).Unmap(), port(row.RemotePort))
			pid = row.OwningPid
		}
		if l == local && r == remote {
			return pid, nil
		}
	}
	return 0, errNoSocket(remote, local)
}

// tcpTable reads the table, growing the buffer while the table grows.
func tcpTable(family uint32) ([]byte, error) {
	size := uint32(16 << 10)
	for range 8 {
		buf := make([]byte, size)
		rc, _, _ := procGetExtendedTcpTable.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0,
			uintptr(family), tcpTableOwnerPidAll, 0)
		switch windows.Errno(rc) {
		case 0:
			return buf, nil
		case windows.ERROR_INSUFFICIENT_BUFFER:
			continue
		default:
			return nil, fmt.Errorf("GetExtendedTcpTable: %w", windows.Errno(rc))
		}
	}
	return nil, fmt.Errorf("GetExtendedTcpTable: the table kept growing")
}

// v4 decodes a row's address and port, both in network byte order.
func v4(addr, p uint32) netip.AddrPort {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], addr)
	return netip.AddrPortFrom(netip.AddrFrom4(b), port(p))
}

// port is a row's port: network byte order in the low 16 bits.
func port(p uint32) uint16 { return uint16(p>>8&0xff | p<<8&0xff00) }

// processUser is the user SID of process pid's token.
func processUser(pid uint32) (*windows.SID, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return nil, err
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return nil, err
	}
	return u.User.Sid.Copy()
}
