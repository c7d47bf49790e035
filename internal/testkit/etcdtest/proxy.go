package etcdtest

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a userspace TCP proxy on a loopback port of its own, for network
// faults without root: Pass forwards, Blackhole keeps every connection open
// but forwards nothing either way (new ones are accepted and held too), Reset
// closes every current connection with an RST. Data a Blackhole holds back is
// delivered after Pass, as TCP retransmission would after a partition heals;
// data already read before Blackhole returned may still be delivered.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	open  chan struct{} // closed while passing; blackholed while open
	links map[*link]struct{}
	ended bool // closed: links made from now on are shut at once
	wg    sync.WaitGroup
}

// link is one client connection and the proxy's connection to the target.
type link struct {
	client, target net.Conn
	closed         chan struct{}
	once           sync.Once
}

// NewProxy listens on a free loopback port and forwards every connection to
// target (host:port) until t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy for %s: %v", target, err)
	}
	p := &Proxy{ln: ln, target: target, open: make(chan struct{}), links: map[*link]struct{}{}}
	close(p.open)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Pass forwards data both ways, including what a blackhole held back.
func (p *Proxy) Pass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Blackhole stops forwarding, in both directions, on every connection, open
// or yet to come, until Pass.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Reset closes every current connection with an RST to both sides (SO_LINGER
// 0); connections made afterwards are forwarded as the mode says.
func (p *Proxy) Reset() {
	p.mu.Lock()
	links := p.links
	p.links = map[*link]struct{}{}
	p.mu.Unlock()
	for l := range links {
		l.shut(true)
	}
}

func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	target, err := net.Dial("tcp", p.target)
	if err != nil {
		// The target is down: refuse as it would, with an RST.
		linger0(client)
		client.Close()
		return
	}
	l := &link{client: client, target: target, closed: make(chan struct{})}
	p.mu.Lock()
	p.links[l] = struct{}{}
	ended := p.ended
	p.mu.Unlock()
	if ended {
		l.shut(true)
	}
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(l, target, client) }()
	go func() { defer both.Done(); p.copy(l, client, target) }()
	both.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// copy forwards src to dst, each chunk only through an open gate; when either
// side ends, the whole link is closed.
func (p *Proxy) copy(l *link, dst, src net.Conn) {
	defer l.shut(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-p.gate():
			case <-l.closed:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// shut closes both connections once; with rst, with SO_LINGER 0 so that both
// peers get an RST instead of a FIN.
func (l *link) shut(rst bool) {
	l.once.Do(func() {
		if rst {
			linger0(l.client)
			linger0(l.target)
		}
		close(l.closed)
		l.client.Close()
		l.target.Close()
	})
}

func linger0(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	p.ln.Close()
	p.Reset()
	p.wg.Wait()
}

// conns is the number of connections the proxy holds now.
func (p *Proxy) conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}
