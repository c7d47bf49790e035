//go:build linux

package platform

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// A host lock is a name in the abstract unix-socket namespace, held by binding
// a socket to it. It backs a file lock where a same-user process could defeat
// the file: flock belongs to an inode, and a worker running as our user can
// unlink or replace the interlock file, after which the next supervisor locks a
// fresh inode and starts its worker beside a live one. An abstract name has no
// inode and no permissions to change: nobody can take it from the socket bound
// to it, and the kernel frees it only when the last descriptor of that socket
// closes, so it is held by a stopped process as firmly as by a running one, and
// shared with a child that inherits the socket (the guardian). The namespace
// is per network namespace: supervisors in different network namespaces are
// kept apart only by the file lock.
//
// Having no permissions cuts both ways: any local user can bind any name
// first. So a name that is taken says who took it (HostLockHolder): the uid
// the holding socket belongs to, which the kernel sets when the socket is
// created and which only root can change. The caller decides whose holds
// count (contain's hostGate: its own uid's and root's).

// OpenHostLock returns an unbound socket to take a host lock with (TryHostLock).
// Create it before handing it to another process, so the lock taken later is
// shared with that process.
func OpenHostLock() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("host lock socket: %w", err)
	}
	return os.NewFile(uintptr(fd), "host-lock"), nil
}

// HostLockName is the abstract socket name ("@…") of the host lock key: the
// same for every process of the host (of its network namespace) that derives
// it from the same key, whoever runs it.
func HostLockName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "@octostore-supervisor/interlock/" + hex.EncodeToString(sum[:])
}

// TryHostLock binds s to the name of key (HostLockName), without waiting;
// false means another socket holds it. Binding the same socket twice is an
// error, so callers remember that they hold it.
func TryHostLock(s *os.File, key string) (bool, error) {
	addr := &unix.SockaddrUnix{Name: HostLockName(key)}
	berr := WithFd(s, func(fd int) error { return unix.Bind(fd, addr) })
	if errors.Is(berr, unix.EADDRINUSE) {
		return false, nil
	}
	if berr != nil {
		return false, fmt.Errorf("bind the host lock: %w", berr)
	}
	return true, nil
}

// HostLockHolder says which uid the socket holding key's name belongs to;
// known is false when no socket holds it (any more) or the kernel does not
// say (before Linux 5.3). It asks the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG), which any user may, and which report the socket
// whatever its type or state: nothing the holder does can hide its owner,
// unlike a connection's peer credentials, which a holder that never listens
// or fills its backlog would withhold.
func HostLockHolder(key string) (uid int, known bool, err error) {
	want := "\x00" + HostLockName(key)[1:]
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, unixDiagDump(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return 0, false, fmt.Errorf("socket diagnostics: %w", err)
		}
		done, uid, found, err := scanUnixDiag(buf[:n], want)
		if err != nil || found {
			return uid, found, err
		}
		if done {
			return 0, false, nil
		}
	}
}

// The kernel's unix_diag interface (linux/unix_diag.h), which x/sys/unix
// does not define.
const (
	udiagShowName = 0x01
	udiagShowUID  = 0x40
	unixDiagName  = 0
	unixDiagUID   = 7
	unixDiagMsgSz = 16 // struct unix_diag_msg
)

// unixDiagDump is a request for every unix socket of this network namespace,
// with its name and owner.
func unixDiagDump() []byte {
	const reqLen = unix.SizeofNlMsghdr + 24 // struct unix_diag_req
	b := make([]byte, reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], reqLen)
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(b[8:], 1) // sequence
	r := b[unix.SizeofNlMsghdr:]
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	ne.PutUint32(r[12:], udiagShowName|udiagShowUID)
	return b
}

// scanUnixDiag looks through one datagram of a unix_diag dump for the socket
// named want (raw: a leading NUL for an abstract name).
func scanUnixDiag(b []byte, want string) (done bool, uid int, found bool, err error) {
	ne := binary.NativeEndian
	for len(b) >= unix.SizeofNlMsghdr {
		l := int(ne.Uint32(b[0:]))
		typ := ne.Uint16(b[4:])
		if l < unix.SizeofNlMsghdr || l > len(b) {
			return false, 0, false, errors.New("socket diagnostics: a malformed reply")
		}
		msg := b[unix.SizeofNlMsghdr:l]
		b = b[min(nlAlign(l), len(b)):]
		switch typ {
		case unix.NLMSG_DONE:
			return true, 0, false, nil
		case unix.NLMSG_ERROR:
			if len(msg) >= 4 {
				if errno := int32(ne.Uint32(msg)); errno != 0 {
					return false, 0, false, fmt.Errorf("socket diagnostics: %w", unix.Errno(-errno))
				}
			}
			return true, 0, false, nil
		}
		if len(msg) < unixDiagMsgSz {
			continue
		}
		name, owner, hasOwner := unixDiagAttrs(msg[unixDiagMsgSz:])
		if name == want {
			return false, owner, hasOwner, nil
		}
	}
	return false, 0, false, nil
}

// unixDiagAttrs reads the name and owner attributes of one socket.
func unixDiagAttrs(b []byte) (name string, uid int, hasUID bool) {
	ne := binary.NativeEndian
	for len(b) >= 4 {
		l := int(ne.Uint16(b[0:]))
		typ := ne.Uint16(b[2:])
		if l < 4 || l > len(b) {
			break
		}
		v := b[4:l]
		switch {
		case typ == unixDiagName:
			name = string(v)
		case typ == unixDiagUID && len(v) >= 4:
			uid, hasUID = int(ne.Uint32(v)), true
		}
		b = b[min(nlAlign(l), len(b)):]
	}
	return name, uid, hasUID
}

func nlAlign(n int) int { return (n + 3) &^ 3 }
