package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy is the HTTP proxy an agent's sandbox reaches the network through
// with network: allowlist: CONNECT tunnels (HTTPS, any TLS) and plain
// HTTP requests in absolute form, to allowed hosts only. Anything else
// gets 403 with a body that names sandbox.allow_hosts, and a warn log
// line with the host alone (never the path, the headers or a body).
//
// It is small on purpose (a CONNECT tunnel is two io.Copy calls; the rest
// is net/http's own client) rather than a general proxy library: what it
// must do is refuse, and every line of that is tested.
type Proxy struct {
	allow []hostRule
	log   *slog.Logger
	dial  net.Dialer
	// forward carries plain HTTP requests; no proxy of its own (the
	// environment's HTTP_PROXY is the agent's business, not golem's).
	forward *http.Transport

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open tunnels, closed by Close
	srv    *http.Server
	closed bool
}

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

// NewProxy returns a proxy that lets through only hosts (allow_hosts
// entries, see parseHostRule); bad entries are an error.
func NewProxy(hosts []string, log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{log: log, conns: map[net.Conn]struct{}{}}
	for _, h := range hosts {
		r, err := parseHostRule(h)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, r)
	}
	p.dial = net.Dialer{Timeout: 30 * time.Second}
	p.forward = &http.Transport{DialContext: p.dial.DialContext, Proxy: nil, ForceAttemptHTTP2: false,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: 10 * time.Minute}
	return p, nil
}

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

// Serve answers proxy requests on l until Close.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.srv == nil {
		p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
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

// refusal is the body of a 403: it names the setting, so that the agent can
// tell the person what to ask for.
func refusal(host string) string {
	return "golem's sandbox refused " + host + ": the agent may reach only its model API and the hosts in sandbox.allow_hosts " +
		"(or channels.<platform:channel>.sandbox.allow_hosts). Ask the operator to add " + host +
		" there, or to set sandbox.network: open for this channel.\n"
}

func (p *Proxy) refuse(w http.ResponseWriter, host string) {
	p.log.Warn("sandbox: refused a host the agent may not reach", "host", host)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, refusal(host))
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
	if !p.allowed(host, port) {
		p.refuse(w, host)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	resp, err := p.forward.RoundTrip(out)
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
	io.CopyBuffer(w, resp.Body, make([]byte, 256<<10)) // a download in few writes
}

// connect opens a tunnel to an allowed host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port := splitTarget(r.Host, 443)
	if !p.allowed(host, port) {
		p.refuse(w, host)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := p.dial.DialContext(ctx, "tcp", net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port)))
	cancel()
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
		io.Copy(up, down)
		closeWrite(up)
		close(done)
	}()
	io.Copy(down, up)
	closeWrite(down)
	<-done
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
