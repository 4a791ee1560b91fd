package sandbox

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkProxyThroughput downloads 100 MB from a local server with curl:
// directly on the host, and from inside a sandbox with network: allowlist
// through golem's proxy (the sandbox's port, which golem serves from
// outside, then a TCP dial), both as a plain HTTP request the proxy
// forwards and as a CONNECT tunnel (as HTTPS goes). Each iteration makes
// the three downloads one after the other, so that a load that comes and
// goes on the machine weighs on all three alike. It reports curl's own
// figure for each transfer (the median over the iterations, MB/s) and the
// proxy's share of direct, which the issue bounds (≥ 80%).
//
//	go test -run '^$' -bench ProxyThroughput -benchtime 5x -count 3 ./sandbox/
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
	// download returns curl's bytes per second.
	download := func(sandboxed bool, args ...string) float64 {
		argv := append([]string{"-sS", "-o", "/dev/null", "-w", "%{size_download} %{speed_download}"}, args...)
		argv = append(argv, srv.URL+"/blob")
		path, cargs, env := "/usr/bin/curl", argv, f.env
		var j *Jail
		if sandboxed {
			var err error
			if j, err = s.Turn(Config{}, Place{Workdir: f.work}).Wrap(Command{Path: path, Args: argv, Env: f.env}); err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			path, cargs, env = j.Path, j.Args, j.Env
		}
		cmd := exec.Command(path, cargs...)
		cmd.Env = env
		if j != nil {
			cmd.ExtraFiles = j.Extra
		}
		out, err := cmd.Output()
		got, bps, _ := strings.Cut(string(out), " ")
		n, perr := strconv.ParseFloat(bps, 64)
		if err != nil || got != strconv.Itoa(size) || perr != nil {
			b.Fatalf("curl: %v, %q", err, out)
		}
		return n
	}
	var direct, forward, connect []float64
	for b.Loop() {
		direct = append(direct, download(false))
		forward = append(forward, download(true))
		connect = append(connect, download(true, "--proxytunnel"))
	}
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	d := median(direct)
	b.ReportMetric(d/1e6, "direct-MB/s")
	b.ReportMetric(median(forward)/1e6, "forward-MB/s")
	b.ReportMetric(median(connect)/1e6, "connect-MB/s")
	b.ReportMetric(100*median(forward)/d, "forward-%")
	b.ReportMetric(100*median(connect)/d, "connect-%")
}
