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
func listenUnix(t *testing.T, path string) *net.UnixListener {
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
			c.Read(make([]byte, 512)) // the probe's request first: it then sees the answer
			io.WriteString(c, "host socket\n")
			c.Close()
		}
	}()
	return l.(*net.UnixListener)
}

// TestSockets: a Unix socket of the host is out of the agent's reach
// wherever it sees the file system: one in /run (Docker's, D-Bus's live
// there), one below $HOME, one in /var (MySQL's, LXD's live there); each
// of them answers outside. The turn's own proxy still carries its
// requests, and a socket in a folder of sandbox.writable (a local
// model's) stays reachable.
func TestSockets(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello through the proxy") }))
	defer srv.Close()
	given := filepath.Join(f.home, "model", "model.sock")
	listenUnix(t, given)
	s := need(t, Config{AllowHosts: []string{strings.TrimPrefix(srv.URL, "http://")}, Writable: []string{filepath.Dir(given)}}, Options{})

	// The socket in /var stays when the test ends (listenUnix unlinks
	// the others): every sandbox on the machine masks it, those of the
	// other packages' tests running now too, and one gone between a
	// sandbox's build and bubblewrap's mount fails that turn's start.
	// Left by the unprivileged run, in a folder of that user's, it tests
	// every later sandbox of a root golem (see reachable). make test
	// removes these before the tests run.
	varDir, err := os.MkdirTemp("/var/tmp", "golem-sbtest-var-")
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(varDir, "db", "db.sock")
	sockets := []string{filepath.Join(f.home, ".local", "share", "app", "agent.sock"), kept}
	if run := fmt.Sprintf("/run/golem-sbtest-%d.sock", os.Getpid()); os.Geteuid() == 0 {
		sockets = append(sockets, run) // only root may make one there
		t.Cleanup(func() { os.Remove(run) })
	}
	for _, p := range sockets {
		l := listenUnix(t, p)
		l.SetUnlinkOnClose(p != kept)
	}
	// curl's exit status 7 is "could not connect"; any other means it did
	// (the host's sockets here answer a line, not HTTP).
	probe := func(p string) string {
		return fmt.Sprintf("curl -s -m 5 -o /dev/null --unix-socket %s http://socket/; [ $? = 7 ] && echo 'refused %s' || echo 'reached %s'\n", p, p, p)
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

// TestSocketOutOfReach: a socket in a folder the sandbox cannot enter
// (another user's, which a root golem's walk finds) needs no mask, and
// gets none: masked, bubblewrap failed to start every sandbox. Root only:
// no other user can make golem's walk see such a socket.
func TestSocketOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make a folder of another user's")
	}
	f := newFixture(t)
	s := need(t, Config{Network: None}, Options{})
	dir, err := os.MkdirTemp("/var/tmp", "golem-sbtest-var-theirs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "db", "db.sock")
	listenUnix(t, sock).SetUnlinkOnClose(false) // it stays out of reach as it goes
	for _, p := range []string{filepath.Dir(sock), dir} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, s.Turn(Config{}, Place{Workdir: f.work}), f.env, "ls "+dir+" 2>&1; echo started")
	if err != nil || !strings.Contains(out, "started") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("the sandbox with another user's socket on the host: %v: %q; want it started, the folder closed to it", err, out)
	}
}
