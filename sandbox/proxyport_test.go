package sandbox

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestProxyPort: with a network, what runs first in the sandbox (golem's
// own executable, package proxyport) opens the proxy's port and becomes
// the CLI: the CLI holds none of golem's file descriptors, its exit status
// is its own, and each sandbox's port is its own (a turn whose channel
// does not allow a host is refused it while another turn that may reach
// it runs).
func TestProxyPort(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	s := need(t, Config{}, Options{})
	place := Place{Workdir: f.work}

	// What the test process itself passes on (a harness's own) ls sees
	// outside too.
	fds := func(path string, args []string, env []string, extra []*os.File) string {
		cmd := exec.Command(path, args...)
		cmd.Env, cmd.ExtraFiles = env, extra
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		var fds []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] { // after "total 0"
			if f := strings.Fields(l); len(f) > 8 {
				fds = append(fds, f[8])
			}
		}
		return strings.Join(fds, " ")
	}
	ls := []string{"-l", "/proc/self/fd"}
	j, err := s.Turn(Config{}, place).Wrap(Command{Path: "/bin/ls", Args: ls, Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	in := fds(j.Path, j.Args, j.Env, j.Extra)
	j.Close()
	if out := fds("/bin/ls", ls, f.env, nil); in != out {
		t.Errorf("the CLI's file descriptors are %s; outside a sandbox %s", in, out)
	}
	_, err = run(t, s.Turn(Config{}, place), f.env, "exit 3")
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("the CLI's exit 3 came out as %v", err)
	}

	// A turn that may reach the server, kept running (cat until its
	// stdin closes) after it did.
	allowed, err := s.Turn(Config{AllowHosts: []string{host}}, place).Wrap(Command{Path: "/bin/sh",
		Args: []string{"-c", "curl -sS -m 20 " + srv.URL + "; echo; cat"}, Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	cmd := exec.Command(allowed.Path, allowed.Args...)
	cmd.Env, cmd.ExtraFiles = allowed.Env, allowed.Extra
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	allowed.AfterStart()
	line := make([]byte, len("hello\n"))
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "hello\n" {
		t.Fatalf("the turn that may reach the server: %q, %v", line, err)
	}
	out, _ := run(t, s.Turn(Config{}, place), f.env, "curl -sS -m 20 "+srv.URL)
	if !strings.Contains(out, "sandbox.allow_hosts") || strings.Contains(out, "hello") {
		t.Errorf("a turn that may not reach the server, while one that may runs: %q", out)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Error(err)
	}
}
