package sandbox

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseHostRule(t *testing.T) {
	for in, want := range map[string]hostRule{
		"github.com":         {host: "github.com"},
		"GitHub.com.":        {host: "github.com"},
		"git.example.com:22": {host: "git.example.com", port: 22},
		"10.0.0.5":           {host: "10.0.0.5"},
		"10.0.0.5:8080":      {host: "10.0.0.5", port: 8080},
		"[::1]":              {host: "::1"},
		"[::1]:443":          {host: "::1", port: 443},
		"::1":                {host: "::1"},
	} {
		got, err := parseHostRule(in)
		if err != nil || got != want {
			t.Errorf("parseHostRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "https://github.com/", "host:port", "host:0", "host:70000", "a b"} {
		if _, err := parseHostRule(bad); err == nil {
			t.Errorf("parseHostRule(%q) accepted it", bad)
		}
	}
}

func FuzzParseHostRule(f *testing.F) {
	for _, s := range []string{"github.com", "10.0.0.5:8080", "[::1]:443", "https://x/", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseHostRule(s)
		if err == nil && (r.host == "" || r.port < 0 || r.port > 65535) {
			t.Errorf("parseHostRule(%q) = %+v", s, r)
		}
	})
}

// TestProxy: a CONNECT tunnel and a forwarded request reach an allowed
// host:port only; a host allowed on another port, or not at all, gets the
// 403 naming sandbox.allow_hosts; Close ends an open tunnel.
func TestProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, err := NewProxy(Allowlist, []string{host + ":" + port, "localhost:1"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	defer p.Close()
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
		DialContext: func(ctx2 context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx2, "unix", sock)
		},
	}}
	get := func(u string) (int, string) {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(srv.URL + "/x"); code != 200 || body != "hello" {
		t.Errorf("forwarded to an allowed host: %d %q", code, body)
	}
	if code, body := get("http://localhost:" + port + "/x"); code != 403 || !strings.Contains(body, "sandbox.allow_hosts") {
		t.Errorf("a host allowed on another port: %d %q", code, body)
	}
	// CONNECT by hand, as curl and Node do for HTTPS.
	connect := func(target string) (*bufio.Reader, net.Conn, *http.Response) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return br, c, resp
	}
	if _, c, resp := connect(net.JoinHostPort(host, "1")); resp.StatusCode != 403 {
		t.Errorf("CONNECT to a port not allowed: %s", resp.Status)
	} else {
		c.Close()
	}
	br, c, resp := connect(host + ":" + port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT to an allowed host: %s", resp.Status)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 5)); r.StatusCode != 200 || string(b) != "hello" {
		t.Errorf("through the tunnel: %s %q", r.Status, b)
	}
	p.Close() // ends the open tunnel
	if _, err := br.ReadByte(); err == nil {
		t.Error("the tunnel stayed open after Close")
	}
	c.Close()
}

// serveProxy serves p on a Unix socket until the test ends and returns a
// client that goes through it.
func serveProxy(t *testing.T, p *Proxy) (*http.Client, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}, sock
}

// TestProxyOpen: with network: open the proxy refuses this machine, by
// IP or by a name that leads there (localhost), through CONNECT and
// forwarding alike, with a 403 naming sandbox.allow_hosts; a host of this
// machine that allow_hosts names gets through; and a host not named gets
// through as long as it is not this machine's (here the guard is told
// that 127.0.0.1 is not: every test talks only to 127.0.0.1).
func TestProxyOpen(t *testing.T) {
	hello := func(name string) (*httptest.Server, string) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from "+name) }))
		t.Cleanup(srv.Close)
		return srv, strings.TrimPrefix(srv.URL, "http://")
	}
	api, apiAddr := hello("golem's API")
	_, allowedAddr := hello("an allowed host")
	_, port, _ := net.SplitHostPort(apiAddr)
	var log logs
	p, err := NewProxy(Open, []string{allowedAddr}, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	client, sock := serveProxy(t, p)
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	connect := func(target string) int {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for _, u := range []string{api.URL, "http://localhost:" + port, "http://0.0.0.0:" + port, "http://[::1]:" + port} {
		if code, body := get(u + "/v1/chat"); code != 403 || !strings.Contains(body, "this machine") || !strings.Contains(body, "sandbox.allow_hosts") {
			t.Errorf("GET %s: %d %q, want the 403 of this machine", u, code, body)
		}
	}
	for _, target := range []string{apiAddr, "localhost:" + port} {
		if code := connect(target); code != 403 {
			t.Errorf("CONNECT %s: %d, want 403", target, code)
		}
	}
	if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "host=localhost") || strings.Contains(l, "/v1/chat") {
		t.Errorf("the refusals' log: %s", l)
	}
	if code, body := get("http://" + allowedAddr + "/"); code != 200 || body != "hello from an allowed host" {
		t.Errorf("a host of this machine that allow_hosts names: %d %q", code, body)
	}
	if code := connect(allowedAddr); code != 200 {
		t.Errorf("CONNECT to an allowed host: %d", code)
	}

	// A proxy for which 127.0.0.1 stands for a host elsewhere.
	p, err = NewProxy(Open, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p.local = func(net.IP) bool { return false }
	client, sock = serveProxy(t, p)
	if code, body := get(api.URL + "/"); code != 200 || body != "hello from golem's API" {
		t.Errorf("a host not named, elsewhere: %d %q", code, body)
	}
	if code := connect(apiAddr); code != 200 {
		t.Errorf("CONNECT to a host not named, elsewhere: %d", code)
	}
}

// TestThisMachine: the addresses network: open refuses.
func TestThisMachine(t *testing.T) {
	local := thisMachine()
	mine := []string{"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::", "169.254.169.254", "fe80::1", "224.0.0.1",
		"fd00:ec2::254", "100.100.100.200", "168.63.129.16"} // the metadata services outside link-local
	if addrs, _ := net.InterfaceAddrs(); len(addrs) > 0 {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				mine = append(mine, n.IP.String())
			}
		}
	}
	for _, s := range mine {
		if !local(net.ParseIP(s)) {
			t.Errorf("%s is this machine's, and was let through", s)
		}
	}
	for _, s := range []string{"192.0.2.10", "198.51.100.7", "2001:db8::5", "10.255.255.254"} {
		if slices.Contains(mine, s) {
			continue // this one is, here
		}
		if local(net.ParseIP(s)) {
			t.Errorf("%s is elsewhere, and was refused", s)
		}
	}
}

// TestProxyBoundsAgentConns: the agent's connections to its proxy,
// tunnels and idle keep-alive ones alike, are bounded (each holds golem's
// descriptors): one over the bound gets a 503 that says why, at once, and
// a warn log; once the agent closes some, it may open more.
func TestProxyBoundsAgentConns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer srv.Close()
	target := strings.TrimPrefix(srv.URL, "http://")
	var log logs
	p, err := NewProxy(Allowlist, []string{target}, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p.maxAgents = 3
	_, sock := serveProxy(t, p)
	ask := func(req string) (net.Conn, *http.Response) {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		return c, resp
	}
	connect := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"
	var held []net.Conn
	for _, req := range []string{connect, connect, "GET " + srv.URL + "/ HTTP/1.1\r\nHost: " + target + "\r\n\r\n"} {
		c, resp := ask(req)
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %s", req, resp.Status)
		}
		if req != connect {
			io.ReadAll(resp.Body) // and the connection stays, idle
		}
		held = append(held, c)
	}
	_, resp := ask(connect)
	var b []byte
	if resp.StatusCode != 200 { // a tunnel's body would not end
		b, _ = io.ReadAll(resp.Body)
	}
	if resp.StatusCode != 503 || !strings.Contains(string(b), "3 connections open") {
		t.Errorf("a connection over the bound: %s %q", resp.Status, b)
	}
	if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "too many connections") {
		t.Errorf("the refusal's log: %s", l)
	}
	held[0].Close()
	held[2].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, resp := ask(connect)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the agent closed two connections, still %s", resp.Status)
		}
		time.Sleep(10 * time.Millisecond) // polls until the proxy has seen them close
	}
}

// TestProxyBoundsIdleUpstream: forwarded requests to one host after
// another leave golem at most maxIdleUpstream idle connections to them,
// not one a host (with network: open, a wildcard DNS name of the agent's
// own is any number of hosts).
func TestProxyBoundsIdleUpstream(t *testing.T) {
	var mu sync.Mutex
	open := 0
	var urls []string
	for range maxIdleUpstream + 24 {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			switch st {
			case http.StateNew:
				open++
			case http.StateClosed, http.StateHijacked:
				open--
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	p, err := NewProxy(Allowlist, []string{"127.0.0.1"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	client, _ := serveProxy(t, p)
	for _, u := range urls {
		resp, err := client.Get(u + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := open
		mu.Unlock()
		if n <= maxIdleUpstream {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to %d hosts stay open, want at most %d", n, len(urls), maxIdleUpstream)
		}
		time.Sleep(10 * time.Millisecond) // polls until the proxy's closes arrive
	}
}

// TestProxyBoundsStalledBuffers: tunnels whose agent stops reading while
// their host goes on sending each hold a copy buffer; golem holds at most
// maxBigBufs big ones in all (before, 200 such tunnels pinned 200 MB), the
// rest copy through small ones, and a new tunnel still carries data.
func TestProxyBoundsStalledBuffers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	target := l.Addr().String()
	p, err := NewProxy(Allowlist, []string{target}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_, sock := serveProxy(t, p)
	tunnel := func() net.Conn {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		return c
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const stalled = 200
	for range stalled {
		tunnel() // and never read
	}
	deadline := time.Now().Add(20 * time.Second)
	for bufsOut.Load() < stalled && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls until each stalled tunnel holds its buffer
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 120<<20 {
		t.Errorf("%d stalled tunnels grew the heap by %d MB", stalled, grown>>20)
	}
	if n := len(bigOut); n != maxBigBufs {
		t.Errorf("%d big buffers out, want all %d held by the stalled tunnels", n, maxBigBufs)
	}
	c := tunnel()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.ReadFull(c, make([]byte, 1<<20)); err != nil {
		t.Errorf("a new tunnel while the big buffers are out read %d bytes: %v", n, err)
	}
}
