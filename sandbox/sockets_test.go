package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listenUnix serves a Unix socket at path until the test ends.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "host socket\n")
			c.Close()
		}
	}()
}

// TestSockets: a Unix socket of the host is out of the agent's reach
// wherever it sees the file system: one in /run (Docker's, D-Bus's live
// there), one below $HOME, one in /var (MySQL's, LXD's live there), and
// another turn's proxy socket in golem's
// TMPDIR (here not /tmp); each of them answers outside. The turn's own
// proxy still carries its requests, and a socket in a folder of
// sandbox.writable (a local model's) stays reachable.
func TestSockets(t *testing.T) {
	f := newFixture(t)
	tmp, err := os.MkdirTemp("/var/tmp", "golem-tmpdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp) // golem's own, where the proxy sockets go
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello through the proxy") }))
	defer srv.Close()
	given := filepath.Join(f.home, "model", "model.sock")
	listenUnix(t, given)
	s := need(t, Config{AllowHosts: []string{strings.TrimPrefix(srv.URL, "http://")}, Writable: []string{filepath.Dir(given)}}, Options{})

	varDir, err := os.MkdirTemp("/var/tmp", "golem-sbtest-var-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(varDir) })
	sockets := []string{filepath.Join(f.home, ".local", "share", "app", "agent.sock"), filepath.Join(varDir, "db", "db.sock")}
	if run := fmt.Sprintf("/run/golem-sbtest-%d.sock", os.Getpid()); os.Geteuid() == 0 {
		sockets = append(sockets, run) // only root may make one there
		t.Cleanup(func() { os.Remove(run) })
	}
	for _, p := range sockets {
		listenUnix(t, p)
	}
	other, err := s.Turn(Config{}, Place{Workdir: f.work}).Wrap(Command{Path: "/bin/true", Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherSock := filepath.Join(other.dir, "proxy.sock")
	if !within(otherSock, tmp) {
		t.Fatalf("the other turn's proxy socket %s is not in TMPDIR %s", otherSock, tmp)
	}
	sockets = append(sockets, otherSock)

	probe := func(p string) string {
		return fmt.Sprintf("%s -u OPEN:/dev/null UNIX-CONNECT:%s 2>/dev/null && echo 'reached %s' || echo 'refused %s'\n", s.st.Socat, p, p, p)
	}
	var script strings.Builder
	for _, p := range sockets {
		// Outside, each answers: the test can fail.
		if out, err := exec.Command("/bin/sh", "-c", probe(p)).CombinedOutput(); err != nil || !strings.Contains(string(out), "reached") {
			t.Fatalf("outside the sandbox %s: %s %v", p, out, err)
		}
		script.WriteString(probe(p))
	}
	script.WriteString(probe(given))
	script.WriteString("ls -A /run\n")
	script.WriteString("curl -sS -m 20 " + srv.URL + "; echo\n")
	out, err := run(t, s.Turn(Config{}, Place{Workdir: f.work}), f.env, script.String())
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range sockets {
		if !strings.Contains(out, "refused "+p) {
			t.Errorf("the agent reached the host's socket %s:\n%s", p, out)
		}
	}
	if !strings.Contains(out, "reached "+given) {
		t.Errorf("the socket in sandbox.writable is out of reach:\n%s", out)
	}
	if !strings.Contains(out, "hello through the proxy") {
		t.Errorf("the turn's own proxy did not carry its request:\n%s", out)
	}
}

// TestStaleProxyRoots: golem's folder of proxy folders left by a golem
// that was killed is removed when the next one starts; one whose golem
// still runs stays.
func TestStaleProxyRoots(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("%s%d-123", proxyRootPrefix, dead.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("%s%d-456", proxyRootPrefix, os.Getpid()))
	for _, d := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(d, "turn-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		listenUnix(t, filepath.Join(d, "turn-1", "proxy.sock"))
	}
	need(t, Config{}, Options{})
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s, left by a golem no longer running, is still there", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s, of a golem still running, was removed: %v", live, err)
	}
}
