package etcdtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	portsEnv  = "OCTOSTORE_ETCD_PORT_BASE"
	portsLock = "/dev/shm/octostore-etcdtest.ports"
	// The ports a cluster uses above its base: clients base+1..3, peers
	// base+11..13.
	clientOffset = 1
	peerOffset   = 11
	portSpan     = peerOffset + members
)

// ports is a port base reserved for one cluster: the OFD lock on byte base of
// portsLock keeps every other cluster, in this test binary or another, off it
// until release.
type ports struct {
	base int
	lock *os.File
}

func (p ports) client(i int) int { return p.base + clientOffset + i }
func (p ports) peer(i int) int   { return p.base + peerOffset + i }
func (p ports) release()         { p.lock.Close() }

// reservePorts takes the base from OCTOSTORE_ETCD_PORT_BASE, or else picks one
// at random below the ephemeral port range (where no outgoing connection takes
// a port from under a restarting member) whose six ports all bind now.
func reservePorts() (ports, error) {
	f, err := os.OpenFile(portsLock, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return ports{}, fmt.Errorf("open the port lock: %w", err)
	}
	if env := os.Getenv(portsEnv); env != "" {
		base, err := strconv.Atoi(env)
		if err != nil || base < 1024 || base+portSpan > 65535 || (base < 2380 && base+portSpan >= 2379) {
			f.Close()
			return ports{}, fmt.Errorf("%s=%q: want a port number from 1024 to %d whose range base..base+%d leaves out 2379 and 2380", portsEnv, env, 65535-portSpan, portSpan)
		}
		p := ports{base: base, lock: f}
		if err := p.try(); err != nil {
			f.Close()
			return ports{}, fmt.Errorf("%s=%d: %w (unset it to have a free base picked)", portsEnv, base, err)
		}
		return p, nil
	}
	lo, hi := 15000, ephemeralLow()-portSpan
	for range 200 {
		p := ports{base: lo + rand.IntN(hi-lo), lock: f}
		if p.try() == nil {
			return p, nil
		}
	}
	f.Close()
	return ports{}, fmt.Errorf("no free port base between %d and %d after 200 tries", lo, hi)
}

// try locks the base's byte and binds the six ports once; on failure the lock
// is dropped again.
func (p ports) try() error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(p.base), Len: 1}
	if err := unix.FcntlFlock(p.lock.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		return fmt.Errorf("port base %d is taken by another test cluster: %w", p.base, err)
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := range members {
		for _, port := range []int{p.client(i), p.peer(i)} {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				lk.Type = unix.F_UNLCK
				_ = unix.FcntlFlock(p.lock.Fd(), unix.F_OFD_SETLK, &lk)
				return err
			}
			ls = append(ls, l)
		}
	}
	return nil
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 20000 {
				return lo
			}
		}
	}
	return 32768
}
