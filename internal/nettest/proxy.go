package nettest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a loopback port to a target, and
// can cut them as a lost network would: Cut makes it stop forwarding
// bytes, both ways, without closing anything, so each side sees silence
// rather than a reset, and connections made meanwhile go nowhere. Heal
// forwards again. Safe for concurrent use.
type Proxy struct {
	Addr string // host:port to connect to instead of the target

	target string
	ln     net.Listener

	mu     sync.Mutex
	cut    bool
	healed *sync.Cond
	conns  map[net.Conn]bool
}

// NewProxy starts a proxy to target for the test; it closes when the test
// ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.healed = sync.NewCond(&p.mu)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// Cut stops forwarding.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Heal forwards again, on the connections Cut held too.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.healed.Broadcast()
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	p.wait()
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	go p.pipe(u, c)
	p.pipe(c, u)
}

// track records c and u for close, or closes them when the proxy is
// closed.
func (p *Proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		c.Close()
		u.Close()
		return false
	}
	p.conns[c], p.conns[u] = true, true
	return true
}

// wait returns once the proxy forwards (or is closed).
func (p *Proxy) wait() {
	p.mu.Lock()
	for p.cut && p.conns != nil {
		p.healed.Wait()
	}
	p.mu.Unlock()
}

// pipe copies src to dst, holding each chunk while the proxy is cut.
func (p *Proxy) pipe(dst io.WriteCloser, src io.ReadCloser) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.healed.Broadcast()
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}
