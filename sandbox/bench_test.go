package sandbox

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkProxyThroughput downloads 100 MB from a local server with curl:
// directly on the host, and from inside a sandbox with network: allowlist
// through golem's proxy (the sandbox's port, which golem serves from
// outside, then a TCP dial), both as a plain HTTP request the proxy
// forwards and as a CONNECT tunnel (as HTTPS goes). Each iteration makes
// the downloads one after the other, so that a load that comes and goes
// on the machine weighs on all alike.
//
// It makes them twice: as fast as loopback goes, and from a server that
// sends at a 10 Gbit/s link's rate (1,250 MB/s, a fast data-centre link).
// The issue bounds the proxy's share of direct (≥ 80%). On loopback the
// direct download is bound by the CPU of curl and of the server, each most
// of one of a small machine's cores, so any hop in between shares their
// cores and costs its whole CPU in speed; at a link's rate it shows
// whether the proxy is what limits a download.
//
// It reports curl's own figure for each transfer (the median over the
// iterations, MB/s), the proxy's share of direct, and the CPU the proxy
// costs golem per 100 MB (this process's CPU during a proxied download:
// the server runs in a process of its own, see startDownloadServer).
//
//	go test -run '^$' -bench ProxyThroughput -benchtime 5x -count 3 ./sandbox/
func BenchmarkProxyThroughput(b *testing.B) {
	base := startDownloadServer(b)
	host := strings.TrimPrefix(base, "http://")
	f := newFixture(b)
	s := needB(b, Config{AllowHosts: []string{host}})
	// download returns curl's bytes per second and this process's CPU
	// meanwhile (the proxy's, for a sandboxed one).
	download := func(url string, sandboxed bool, args ...string) (float64, time.Duration) {
		argv := append([]string{"-sS", "-o", "/dev/null", "-w", "%{size_download} %{speed_download}"}, args...)
		argv = append(argv, url)
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
		cpu := ownCPU()
		out, err := cmd.Output()
		cpu = ownCPU() - cpu
		got, bps, _ := strings.Cut(string(out), " ")
		n, perr := strconv.ParseFloat(bps, 64)
		if err != nil || got != strconv.Itoa(downloadSize) || perr != nil {
			b.Fatalf("curl: %v, %q", err, out)
		}
		return n, cpu
	}
	type runs struct {
		direct, forward, connect []float64
		forwardCPU, connectCPU   []time.Duration
	}
	measure := func(rs *runs, url string) {
		d, _ := download(url, false)
		fw, fcpu := download(url, true)
		c, ccpu := download(url, true, "--proxytunnel")
		rs.direct, rs.forward, rs.connect = append(rs.direct, d), append(rs.forward, fw), append(rs.connect, c)
		rs.forwardCPU, rs.connectCPU = append(rs.forwardCPU, fcpu), append(rs.connectCPU, ccpu)
	}
	var loop, link runs
	for b.Loop() {
		measure(&loop, base+"/blob")
		measure(&link, base+"/blob?rate=1.25e9")
	}
	report := func(name string, rs runs) {
		d := median(rs.direct)
		b.ReportMetric(d/1e6, name+"-direct-MB/s")
		b.ReportMetric(100*median(rs.forward)/d, name+"-forward-%")
		b.ReportMetric(100*median(rs.connect)/d, name+"-connect-%")
		b.ReportMetric(float64(median(rs.forwardCPU))/1e6, name+"-forward-cpu-ms")
		b.ReportMetric(float64(median(rs.connectCPU))/1e6, name+"-connect-cpu-ms")
	}
	report("loopback", loop)
	report("10Gbit", link)
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// ownCPU is this process's CPU time so far, user and system.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
