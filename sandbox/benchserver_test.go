package sandbox

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain serves downloads instead of testing when BenchmarkProxyThroughput
// starts this binary as its server (see startDownloadServer).
func TestMain(m *testing.M) {
	if os.Getenv("GOLEM_DOWNLOAD_SERVER") == "1" {
		serveDownloads()
		return
	}
	os.Exit(m.Run())
}

// downloadSize is what the download server sends for any path.
const downloadSize = 100 << 20

// startDownloadServer starts this test binary as a download server in a
// process of its own, so that the benchmark's own CPU is the proxy's alone,
// and returns its base URL. It ends with the benchmark.
func startDownloadServer(b *testing.B) string {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GOLEM_DOWNLOAD_SERVER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("download server: %v", err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// serveDownloads answers every request with downloadSize random bytes, at
// ?rate= bytes per second when given, until its standard input closes.
func serveDownloads() {
	blob := make([]byte, 1<<20)
	rand.Read(blob)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		// Unpaced it writes 1 MB at a time; paced, 64 KB at a time, each
		// when the rate allows.
		rate, _ := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
		chunk := len(blob)
		if rate > 0 {
			chunk = 64 << 10
		}
		start := time.Now()
		for sent := 0; sent < downloadSize; sent += chunk {
			if rate > 0 {
				time.Sleep(time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))))
			}
			off := sent % len(blob)
			if _, err := w.Write(blob[off : off+chunk]); err != nil {
				return
			}
		}
	}))
}
