package sandbox

import (
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkProxyThroughput downloads 100 MB from a local server with curl:
// directly on the host, and from inside a sandbox with network: allowlist
// through golem's proxy (socat inside, the proxy's Unix socket, a TCP
// dial), both as a plain HTTP request the proxy forwards and as a CONNECT
// tunnel (as HTTPS goes). It reports MB/s over the whole run of curl (the
// sandbox's start included, some 25 ms of 200) and curl-MB/s, curl's own
// figure for the transfer; the proxy's ratio to direct is what the issue
// bounds (≥ 80%).
//
//	go test -run '^$' -bench ProxyThroughput -benchtime 5x ./sandbox/
func BenchmarkProxyThroughput(b *testing.B) {
	const size = 100 << 20
	blob := make([]byte, 1<<20)
	rand.Read(blob)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for i := 0; i < size/len(blob); i++ {
			w.Write(blob)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	f := newFixture(b)
	s := needB(b, Config{AllowHosts: []string{host}})
	download := func(b *testing.B, sandboxed bool, args ...string) {
		var total time.Duration
		var speed float64 // curl's bytes/s, summed
		for b.Loop() {
			argv := append([]string{"-sS", "-o", "/dev/null", "-w", "%{size_download} %{speed_download}"}, args...)
			argv = append(argv, srv.URL+"/blob")
			path, cargs, env := "/usr/bin/curl", argv, f.env
			var j *Jail
			if sandboxed {
				var err error
				if j, err = s.Turn(Config{}, Place{Workdir: f.work}).Wrap(Command{Path: path, Args: argv, Env: f.env}); err != nil {
					b.Fatal(err)
				}
				path, cargs, env = j.Path, j.Args, j.Env
			}
			cmd := exec.Command(path, cargs...)
			cmd.Env = env
			if j != nil {
				cmd.ExtraFiles = j.Extra
			}
			start := time.Now()
			out, err := cmd.Output()
			total += time.Since(start)
			if j != nil {
				j.Close()
			}
			got, bps, _ := strings.Cut(string(out), " ")
			n, perr := strconv.ParseFloat(bps, 64)
			if err != nil || got != strconv.Itoa(size) || perr != nil {
				b.Fatalf("curl: %v, %q", err, out)
			}
			speed += n
		}
		b.ReportMetric(float64(size)*float64(b.N)/total.Seconds()/1e6, "MB/s")
		b.ReportMetric(speed/float64(b.N)/1e6, "curl-MB/s")
	}
	b.Run("direct", func(b *testing.B) { download(b, false) })
	b.Run("proxy-forward", func(b *testing.B) { download(b, true) })
	b.Run("proxy-connect", func(b *testing.B) { download(b, true, "--proxytunnel") })
	_ = io.Discard
}
