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
	"strings"
	"testing"
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
	p, err := NewProxy([]string{host + ":" + port, "localhost:1"}, slog.New(slog.DiscardHandler))
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
