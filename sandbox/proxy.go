package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Proxy is the HTTP proxy an agent's sandbox reaches the network through:
// CONNECT tunnels (HTTPS, any TLS) and plain HTTP requests in absolute
// form. With network: allowlist it lets through the allowed hosts only;
// with network: open every host but this machine itself (see
// thisMachine), whatever name leads there, unless it is allowed by name.
// Anything else gets 403 with a body that names the setting, and a warn
// log line with the host alone (never the path, the headers or a body).
//
// It is small on purpose (a CONNECT tunnel is two copies, see tunnel; the
// rest is net/http's own client) rather than a general proxy library: what it
// must do is refuse, and every line of that is tested.
type Proxy struct {
	allow []hostRule
	log   *slog.Logger
	dial  net.Dialer
	// open lets through the hosts not allowed too, dialled by guarded,
	// which refuses an address for which local is true (errLocal).
	open    bool
	guarded net.Dialer
	local   func(net.IP) bool
	// forward carries plain HTTP requests; no proxy of its own (the
	// environment's HTTP_PROXY is the agent's business, not golem's).
	forward *http.Transport

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open tunnels, closed by Close
	srv    *http.Server
	closed bool
	// agents counts the agent's connections to the proxy (a tunnel's
	// among them until it ends), at most maxAgents; warned says the
	// refusal of one more was logged.
	agents, maxAgents int
	warned            bool
}

// maxAgentConns bounds the connections one turn's agent holds open to its
// proxy at once, tunnels among them. Each costs golem file descriptors (a
// tunnel two, its sockets; an idle keep-alive one, which nothing times
// out, one) and, while data flows, a 1 MB buffer: without a bound an agent could take all of golem's
// descriptors, and the other conversations' turns, golem's store and its
// chat connections would fail with it (found by review). Tools keep far
// fewer: Chromium 32 to a proxy, npm 15, pip 10.
const maxAgentConns = 256

// hostRule is one allowed host: a name or an IP, any port when port is 0.
type hostRule struct {
	host string // lower case; an IP in its canonical form
	port int
}

// parseHostRule reads an allow_hosts entry: "host", "1.2.3.4", "[::1]",
// "host:443", "[::1]:8080".
func parseHostRule(s string) (hostRule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return hostRule{}, errors.New("empty host")
	}
	if strings.Contains(s, "/") {
		return hostRule{}, fmt.Errorf("%q: a host, an IP address or host:port, not a URL", s)
	}
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return hostRule{}, fmt.Errorf("%q: bad port %q", s, p)
		}
		host, port = h, n
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Count(s, ":") == 1 {
		return hostRule{}, fmt.Errorf("%q: %w", s, err)
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	} else if strings.ContainsAny(host, ": ") || host == "" {
		return hostRule{}, fmt.Errorf("%q is not a host name or an IP address", s)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || strings.HasPrefix(host, ".") {
		return hostRule{}, fmt.Errorf("%q is not a host name or an IP address", s)
	}
	return hostRule{host: host, port: port}, nil
}

// NewProxy returns the proxy of network (Allowlist or Open) that lets
// through hosts (allow_hosts entries, see parseHostRule); bad entries are
// an error.
func NewProxy(network Network, hosts []string, log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{log: log, conns: map[net.Conn]struct{}{}, open: network == Open, maxAgents: maxAgentConns}
	for _, h := range hosts {
		r, err := parseHostRule(h)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, r)
	}
	p.dial = net.Dialer{Timeout: 30 * time.Second}
	if p.open {
		p.local = thisMachine()
		p.guarded = net.Dialer{Timeout: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			host, _, _ := net.SplitHostPort(address)
			if ip := net.ParseIP(host); ip == nil || p.local(ip) {
				return errLocal
			}
			return nil
		}}
	}
	p.forward = &http.Transport{DialContext: p.dialAddr, Proxy: nil, ForceAttemptHTTP2: false,
		MaxIdleConns: maxIdleUpstream, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: 10 * time.Minute}
	return p, nil
}

// maxIdleUpstream bounds the idle connections the forwarding transport
// keeps, over every host: with network: open an agent asking for one
// host after another (a wildcard DNS name of its own) would otherwise
// leave golem thousands of idle connections, and their descriptors, for
// IdleConnTimeout (found by review).
const maxIdleUpstream = 16

// allowed reports whether host:port may be reached.
func (p *Proxy) allowed(host string, port int) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
		h = ip.String()
	}
	for _, r := range p.allow {
		if r.host == h && (r.port == 0 || r.port == port) {
			return true
		}
	}
	return false
}

// errLocal is the guarded dialer's refusal of an address of this machine.
var errLocal = errors.New("an address of this machine")

// metadataServices are the cloud metadata services, which hand out the
// machine's credentials, outside link-local: AWS's over IPv6, Alibaba
// Cloud's, and Azure's WireServer (found by review).
var metadataServices = []net.IP{net.ParseIP("fd00:ec2::254"), net.ParseIP("100.100.100.200"), net.ParseIP("168.63.129.16")}

// thisMachine returns whether an IP is this machine's: loopback (where
// golem's HTTP API listens, and any service that trusts local callers),
// unspecified (0.0.0.0 is loopback to connect), link-local (the cloud's
// metadata service at 169.254.169.254 among them), the other metadata
// services, multicast, or an address of one of its interfaces now.
func thisMachine() func(net.IP) bool {
	own := slices.Clone(metadataServices)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				own = append(own, n.IP)
			}
		}
	}
	return func(ip net.IP) bool {
		if ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsMulticast() {
			return true
		}
		for _, o := range own {
			if o.Equal(ip) {
				return true
			}
		}
		return false
	}
}

// dialTo dials host:port for the agent: an allowed host as it is named,
// another one (network: open) unless it resolves to this machine only
// (errLocal); errNotAllowed with network: allowlist.
func (p *Proxy) dialTo(ctx context.Context, host string, port int) (net.Conn, error) {
	addr := net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
	switch {
	case p.allowed(host, port):
		return p.dial.DialContext(ctx, "tcp", addr)
	case p.open:
		return p.guarded.DialContext(ctx, "tcp", addr)
	}
	return nil, errNotAllowed
}

// errNotAllowed is dialTo's refusal of a host not allowed.
var errNotAllowed = errors.New("not an allowed host")

// dialAddr is the forwarding transport's dialer.
func (p *Proxy) dialAddr(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port := splitTarget(addr, 80)
	return p.dialTo(ctx, host, port)
}

// refused reports whether a dial's error is a refusal (a 403), not a
// failure to reach the host (a 502).
func refused(err error) bool { return errors.Is(err, errLocal) || errors.Is(err, errNotAllowed) }

// Serve answers proxy requests on l until Close.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.srv == nil {
		p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil, ConnState: p.count}
	}
	srv := p.srv
	p.mu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and ends every open tunnel.
func (p *Proxy) Close() error {
	p.mu.Lock()
	srv := p.srv
	if srv == nil {
		p.srv = &http.Server{} // a later Serve returns at once
		srv = p.srv
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.forward.CloseIdleConnections()
	return srv.Close()
}

// tooMany is the answer to a connection over maxAgents.
const tooMany = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"golem's sandbox proxy: the agent has %d connections open through it, the most one turn may; close some (idle keep-alive ones, finished tunnels) and try again.\n"

// count keeps p.agents (http.Server's ConnState): a new connection over
// maxAgents gets the 503 of tooMany and is closed at once, before it can
// hold a descriptor for ReadHeaderTimeout. A hijacked one (a tunnel)
// counts until connect ends it (release).
func (p *Proxy) count(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		p.mu.Lock()
		p.agents++
		over, warn := p.agents > p.maxAgents, !p.warned
		if over {
			p.warned = true
		}
		p.mu.Unlock()
		if !over {
			return
		}
		if warn {
			p.log.Warn("sandbox: the agent holds too many connections to its proxy; more are refused", "max", p.maxAgents)
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		fmt.Fprintf(c, tooMany, p.maxAgents)
		c.Close() // StateClosed follows
	case http.StateClosed:
		p.release()
	}
}

// release ends the count of one of the agent's connections.
func (p *Proxy) release() {
	p.mu.Lock()
	p.agents--
	p.mu.Unlock()
}

// refusal is the body of a 403: it names the setting, so that the agent can
// tell the person what to ask for.
func (p *Proxy) refusal(host string) string {
	if p.open {
		return "golem's sandbox refused " + host + ": with sandbox.network: open the agent may reach any host but this machine " +
			"itself (its loopback, link-local and own addresses, where golem's HTTP API listens, and the cloud's metadata services), unless sandbox.allow_hosts " +
			"(or channels.<platform:channel>.sandbox.allow_hosts) names it. Ask the operator to add " + host + " there.\n"
	}
	return "golem's sandbox refused " + host + ": the agent may reach only its model API and the hosts in sandbox.allow_hosts " +
		"(or channels.<platform:channel>.sandbox.allow_hosts). Ask the operator to add " + host +
		" there, or to set sandbox.network: open for this channel.\n"
}

func (p *Proxy) refuse(w http.ResponseWriter, host string) {
	p.log.Warn("sandbox: refused a host the agent may not reach", "host", host)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, p.refusal(host))
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Host == "" || (r.URL.Scheme != "http") {
		http.Error(w, "golem's sandbox proxy takes CONNECT and absolute http:// requests only", http.StatusBadRequest)
		return
	}
	host, port := splitTarget(r.URL.Host, 80)
	if !p.open && !p.allowed(host, port) {
		p.refuse(w, host)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	resp, err := p.forward.RoundTrip(out)
	if refused(err) {
		p.refuse(w, host)
		return
	}
	if err != nil {
		http.Error(w, "golem's sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	buf := getBuf()
	defer putBuf(buf)
	// Write alone: the ResponseWriter's own ReadFrom would copy through
	// 32 KB.
	io.CopyBuffer(struct{ io.Writer }{w}, resp.Body, *buf)
}

// connect opens a tunnel to an allowed host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port := splitTarget(r.Host, 443)
	if !p.open && !p.allowed(host, port) {
		p.refuse(w, host)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := p.dialTo(ctx, host, port)
	cancel()
	if refused(err) {
		p.refuse(w, host)
		return
	}
	if err != nil {
		http.Error(w, "golem's sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "golem's sandbox proxy: no tunnel over this connection", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	defer p.release() // hijacked: no StateClosed comes
	if !p.track(down, up) {
		return
	}
	defer p.untrack(down, up)
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		// What the client sent after its CONNECT, already buffered, first.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			up.Write(b)
		}
		tunnel(up, down)
		closeWrite(up)
		close(done)
	}()
	tunnel(down, up)
	closeWrite(down)
	<-done
}

// copyBufSize is the buffer a forwarded body or a tunnel's data goes
// through: a download of 100 MB then takes a few hundred reads and writes.
// A buffer is held while its data is written on, which a reader that
// stalls makes forever: maxBigBufs of them are out at once in all of
// golem (64 MB), and a copy that finds none goes through smallBufSize.
// Without the bound one agent's 256 stalled connections pinned 512 MB.
const (
	copyBufSize  = 1 << 20
	smallBufSize = 32 << 10
	maxBigBufs   = 64
)

// bigBufs and smallBufs are the buffers of forwarded bodies and tunnels;
// bigOut holds a token for each big one out.
var (
	bigBufs   = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}
	smallBufs = sync.Pool{New: func() any { b := make([]byte, smallBufSize); return &b }}
	bigOut    = make(chan struct{}, maxBigBufs)
	bufsOut   atomic.Int64 // of either size, for tests
)

// getBuf returns a copy buffer: a big one while fewer than maxBigBufs are
// out, else a small one. Give it back with putBuf.
func getBuf() *[]byte {
	bufsOut.Add(1)
	select {
	case bigOut <- struct{}{}:
		return bigBufs.Get().(*[]byte)
	default:
		return smallBufs.Get().(*[]byte)
	}
}

func putBuf(b *[]byte) {
	bufsOut.Add(-1)
	if len(*b) == copyBufSize {
		bigBufs.Put(b)
		<-bigOut
		return
	}
	smallBufs.Put(b)
}

// tunnel copies src to dst until src's end or an error, through a pooled
// buffer taken only when src has data: an idle tunnel holds its two
// sockets and nothing else.
//
// It does not splice, though both ends are TCP sockets and io.Copy would:
// measured with the download server in a process of its own
// (BenchmarkProxyThroughput, six pairs taken in turn, load about 1),
// the copy carried more in 6 pairs of 6 at a 10 Gbit/s link's rate
// (79–103% of direct against 76–91% spliced) and in 5 of 6 on loopback
// (40–58% against 39–46%), for the same CPU (44–81 against 43–68 ms per
// 100 MB). The pages a splice hands on reach curl colder, and its receive
// copy costs more than golem's copy saves; a spliced tunnel also holds a
// pipe for each direction (four more descriptors) while it waits.
func tunnel(dst, src net.Conn) error {
	sc, ok := src.(syscall.Conn)
	if !ok {
		buf := getBuf()
		defer putBuf(buf)
		_, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
		return err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	for {
		var buf *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			b := getBuf()
			n, rerr = ignoringEINTR(func() (int, error) { return syscall.Read(int(fd), *b) })
			if rerr == syscall.EAGAIN {
				putBuf(b)
				return false // wait until src is readable
			}
			buf = b
			return true
		})
		if err == nil {
			err = rerr
		}
		if err != nil || n <= 0 {
			if buf != nil {
				putBuf(buf)
			}
			return err
		}
		_, err = dst.Write((*buf)[:n])
		putBuf(buf)
		if err != nil {
			return err
		}
	}
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// track records an open tunnel; false (and both closed) once Close ran.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
	p.mu.Unlock()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// splitTarget splits host[:port], defaulting the port.
func splitTarget(hostport string, def int) (string, int) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return h, n
		}
		return h, def
	}
	return hostport, def
}

var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for _, k := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(k))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
