package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// need returns golem's sandbox for cfg, or skips the test where bwrap
// cannot work (GOLEM_REQUIRE_TOOLS makes that a failure, as make test sets).
func need(t *testing.T, cfg Config, o Options) *Sandbox {
	t.Helper()
	st := Probe(context.Background())
	if !st.Works() {
		if os.Getenv("GOLEM_REQUIRE_TOOLS") == "1" {
			t.Fatalf("the sandbox cannot work here: %v", st.Err)
		}
		t.Skipf("the sandbox cannot work here: %v", st.Err)
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeOn
	}
	s, err := New(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// needB is need for a benchmark.
func needB(b *testing.B, cfg Config) *Sandbox {
	b.Helper()
	st := Probe(context.Background())
	if !st.Works() {
		b.Skipf("the sandbox cannot work here: %v", st.Err)
	}
	cfg.Mode = ModeOn
	s, err := New(context.Background(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// logs is a slog handler that keeps what was logged.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// run runs script with /bin/sh in turn's sandbox and returns what it
// printed and its error.
func run(t *testing.T, turn *Turn, env []string, script string) (string, error) {
	t.Helper()
	j, err := turn.Wrap(Command{Path: "/bin/sh", Args: []string{"-c", script}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	return runJail(t, j)
}

// runJail runs j's command to its end and returns what it printed and
// its error.
func runJail(t *testing.T, j *Jail) (string, error) {
	t.Helper()
	cmd := exec.Command(j.Path, j.Args...)
	cmd.Env = j.Env
	cmd.ExtraFiles = j.Extra
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	j.AfterStart()
	err := cmd.Wait()
	if !j.Started() {
		t.Fatalf("the sandbox did not start: %s", out.String())
	}
	return out.String(), err
}

// fixture is a host with a home holding credentials, golem's store and
// config, and a shared workspace with another conversation's attachment.
type fixture struct {
	home, store, config, work, outside string
	env                                []string
}

func newFixture(t testing.TB) fixture {
	// Outside /tmp, which the sandbox replaces by its own.
	root, err := os.MkdirTemp("/var/tmp", "golem-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	f := fixture{home: filepath.Join(root, "home"), store: filepath.Join(root, "data"), config: filepath.Join(root, "bot.yaml"),
		work: filepath.Join(root, "workspace"), outside: filepath.Join(root, "elsewhere")}
	for path, body := range map[string]string{
		filepath.Join(f.home, ".ssh", "id_ed25519"):     "PRIVATE KEY",
		filepath.Join(f.home, ".aws", "credentials"):    "aws-secret",
		filepath.Join(f.home, ".config", "gh", "hosts"): "gh-secret",
		filepath.Join(f.home, ".netrc"):                 "machine x password netrc-secret",
		filepath.Join(f.home, ".docker", "config.json"): "docker-secret",
		filepath.Join(f.home, "notes.txt"):              "visible notes",
		filepath.Join(f.store, "golem.db"):              "store-secret",
		f.config:                                        "slack: {bot_token: xoxb-secret}",
		filepath.Join(f.work, "README"):                 "the workspace",
		filepath.Join(f.work, "inbox", "theirs.txt"):    "another conversation's file",
		filepath.Join(f.work, "inbox", "mine.txt"):      "this turn's file",
		filepath.Join(f.outside, "file"):                "outside",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.env = []string{"PATH=/usr/bin:/bin", "HOME=" + f.home}
	return f
}

// TestFiles: on isolation: shared the agent writes its workspace and its
// state folder, reads the rest of the host and of $HOME read-only (a
// write fails with the file system's error), and sees neither the store,
// the config file, the credentials in $HOME nor another conversation's
// attachment; /tmp is its own; golem's processes are not in its /proc.
func TestFiles(t *testing.T) {
	f := newFixture(t)
	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config, filepath.Join(f.work, "data")}})
	turn := s.Turn(Config{}, Place{Workdir: f.work, Files: []string{filepath.Join(f.work, "inbox", "mine.txt")}})
	hostTmp := t.TempDir()
	os.WriteFile(filepath.Join(hostTmp, "host-file"), []byte("host tmp"), 0o644)
	script := fmt.Sprintf(`
echo new > %[1]s/made-inside && echo workdir-writable
cat %[1]s/inbox/mine.txt; echo
cat %[1]s/inbox/theirs.txt 2>/dev/null || echo theirs-hidden
cat %[2]s/notes.txt; echo
echo x > %[2]s/new-file 2>&1 || echo home-readonly
echo x > %[3]s/file 2>&1 || echo outside-readonly
cat %[1]s/data/golem.db 2>&1
cat %[2]s/.ssh/id_ed25519 %[2]s/.aws/credentials %[2]s/.config/gh/hosts %[2]s/.netrc %[2]s/.docker/config.json %[4]s/golem.db %[5]s 2>&1
ls -A %[4]s | wc -l
ls %[6]s 2>&1 || true
echo t > /tmp/scratch && echo tmp-writable
ls /proc | grep -c '^[0-9]'
`, f.work, f.home, f.outside, f.store, f.config, hostTmp)
	out, err := run(t, turn, f.env, script)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"workdir-writable", "this turn's file", "theirs-hidden", "visible notes",
		"home-readonly", "outside-readonly", "Read-only file system", "tmp-writable"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"PRIVATE KEY", "aws-secret", "gh-secret", "netrc-secret", "docker-secret", "store-secret", "store-in-workspace-secret", "xoxb-secret", "host-file", "another conversation"} {
		if strings.Contains(out, secret) {
			t.Errorf("the agent saw %q:\n%s", secret, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.work, "made-inside")); err != nil || string(b) != "new\n" {
		t.Errorf("the workspace file made inside: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(f.home, "new-file")); err == nil {
		t.Error("a write to $HOME landed")
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if n := lines[len(lines)-1]; n != "3" && n != "2" && n != "4" { // bwrap, sh, ls (and grep)
		t.Errorf("%s processes in the sandbox's /proc, want only its own", n)
	}
}

// TestNoCapabilities: run by root (as CI and this project's machines run
// it), the agent keeps no capability inside the sandbox, so it can neither
// unmount a mask to read what it hides nor remount a read-only path to
// write it (found by review: as root bwrap kept them all).
func TestNoCapabilities(t *testing.T) {
	f := newFixture(t)
	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}})
	turn := s.Turn(Config{}, Place{Workdir: f.work})
	script := fmt.Sprintf(`
grep CapEff /proc/self/status
umount %[1]s 2>/dev/null; cat %[1]s/golem.db 2>/dev/null; echo
umount %[2]s 2>/dev/null; cat %[2]s 2>/dev/null; echo
mount -o remount,bind,rw %[3]s 2>/dev/null; echo x > %[3]s/file 2>/dev/null || echo outside-readonly
unshare -Urm true 2>/dev/null || echo no-nested-namespace
`, f.store, f.config, f.outside)
	out, err := run(t, turn, f.env, script)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "CapEff:\t0000000000000000") {
		t.Errorf("the agent has capabilities:\n%s", out)
	}
	for _, secret := range []string{"store-secret", "xoxb-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("unmounting a mask showed %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"outside-readonly", "no-nested-namespace"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "file")); string(b) != "outside" {
		t.Errorf("a file outside was changed: %q", b)
	}
}

// TestNetwork: allowlist lets through the model API host and allow_hosts
// (by IP and port) through golem's proxy, and refuses the rest with a 403
// naming sandbox.allow_hosts and a warn log with the host only; none has
// no network; open lets through every host but this machine's own.
func TestNetwork(t *testing.T) {
	f := newFixture(t)
	hello := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from "+name) }))
		t.Cleanup(srv.Close)
		return srv
	}
	api, allowed, refused := hello("api"), hello("allowed"), hello("refused")
	hostport := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	var log logs
	s := need(t, Config{AllowHosts: []string{hostport(allowed)}}, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	curl := func(turn *Turn, url string, hosts ...string) string {
		j, err := turn.Wrap(Command{Path: "/usr/bin/curl", Args: []string{"-sS", "-m", "20", url + "/secret/path"}, Env: f.env, APIHosts: hosts})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		cmd := exec.Command(j.Path, j.Args...)
		cmd.Env, cmd.ExtraFiles = j.Env, j.Extra
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	place := Place{Workdir: f.work}
	turn := s.Turn(Config{}, place)
	if got := curl(turn, api.URL, hostport(api)); got != "hello from api" {
		t.Errorf("the model API: %q", got)
	}
	if got := curl(turn, allowed.URL); got != "hello from allowed" {
		t.Errorf("an allowed host: %q", got)
	}
	got := curl(turn, refused.URL)
	if !strings.Contains(got, "sandbox.allow_hosts") || strings.Contains(got, "hello") {
		t.Errorf("a refused host: %q", got)
	}
	if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "host=127.0.0.1") || strings.Contains(l, "secret") {
		t.Errorf("the refusal's log: %s", l)
	}
	// A channel that allows the refused one.
	if got := curl(s.Turn(Config{AllowHosts: []string{hostport(refused)}}, place), refused.URL); got != "hello from refused" {
		t.Errorf("a host the channel allows: %q", got)
	}
	if got := curl(s.Turn(Config{Network: None}, place), api.URL, hostport(api)); strings.Contains(got, "hello") {
		t.Errorf("network none reached the model API: %q", got)
	}
	// Open: any host but this machine's own (every test server here is on
	// its loopback, as golem's HTTP API is), unless allow_hosts names it;
	// the way out is the proxy, so a tool that ignores it reaches nothing.
	open := s.Turn(Config{Network: Open}, place)
	if got := curl(open, refused.URL); !strings.Contains(got, "this machine") || strings.Contains(got, "hello") {
		t.Errorf("network open reached this machine's loopback: %q", got)
	}
	if got := curl(open, api.URL, hostport(api)); got != "hello from api" {
		t.Errorf("network open, the model API: %q", got)
	}
	if got := curl(open, allowed.URL); got != "hello from allowed" {
		t.Errorf("network open, a host of this machine that allow_hosts names: %q", got)
	}
	j, err := open.Wrap(Command{Path: "/usr/bin/curl", Args: []string{"-sS", "-m", "20", "--noproxy", "*", allowed.URL}, Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cmd := exec.Command(j.Path, j.Args...)
	cmd.Env, cmd.ExtraFiles = j.Env, j.Extra
	if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), "hello") {
		t.Errorf("network open, a curl that ignores the proxy: %q, %v", out, err)
	}
}

// TestProcesses: what the agent finds in its /proc of golem and of the
// sandbox: no process's command line names a hidden path or a mount
// (bwrap reads its arguments from a file, not argv, and bwrap is the
// sandbox's pid 1), and no process's environment holds golem's (the test
// process stands for golem: its variables hold a token).
func TestProcesses(t *testing.T) {
	f := newFixture(t)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-golems-own")
	s := need(t, Config{}, Options{Hide: []string{f.store, f.config}})
	out, err := run(t, s.Turn(Config{}, Place{Workdir: f.work}), f.env, `
echo "pid1: $(tr '\0' ' ' < /proc/1/cmdline)"
for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; tr '\0' '\n' < $p/environ; done 2>/dev/null
`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "pid1: ") || !strings.Contains(out, "bwrap") {
		t.Fatalf("the sandbox's pid 1 is not bwrap:\n%s", out)
	}
	for _, leak := range []string{f.store, f.config, "--ro-bind", "--tmpfs", "--unshare", "xoxb-golems-own"} {
		if strings.Contains(out, leak) {
			t.Errorf("the agent's /proc shows %q:\n%s", leak, out)
		}
	}
}

// TestNotRoot: the agent is not root inside, even when golem is (then it
// is nobody, 65534); it still reads and writes what golem's user owns
// where the mounts allow: its working directory and a 0600 file of golem's.
func TestNotRoot(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.home, "private"), []byte("golem's own"), 0o600)
	s := need(t, Config{Network: None}, Options{})
	out, err := run(t, s.Turn(Config{}, Place{Workdir: f.work}), f.env, fmt.Sprintf(`
echo "uid=$(id -u) gid=$(id -g)"
cat %s/private; echo
echo x > %s/by-agent && echo wrote-workdir
`, f.home, f.work))
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := fmt.Sprintf("uid=%d gid=%d", os.Geteuid(), os.Getegid())
	if os.Geteuid() == 0 {
		want = "uid=65534 gid=65534"
	}
	for _, w := range []string{want, "golem's own", "wrote-workdir"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	fi, err := os.Stat(filepath.Join(f.work, "by-agent"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("the agent's file is owned by %d on the host, want golem's %d", st.Uid, os.Geteuid())
	}
}

// TestFilesInHostTmp: a workspace in the host's /tmp (which the sandbox
// replaces by its own, then binds the workspace back) keeps its masks:
// another conversation's attachment in inbox/ and golem's store in the
// workspace stay hidden.
func TestFilesInHostTmp(t *testing.T) {
	work := t.TempDir()
	for path, body := range map[string]string{
		filepath.Join(work, "inbox", "theirs.txt"): "another conversation's file",
		filepath.Join(work, "inbox", "mine.txt"):   "this turn's file",
		filepath.Join(work, "data", "golem.db"):    "store-secret",
	} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(work, 0o755) // the unprivileged run's user may enter it
	s := need(t, Config{Network: None}, Options{Hide: []string{filepath.Join(work, "data")}})
	turn := s.Turn(Config{}, Place{Workdir: work, Files: []string{filepath.Join(work, "inbox", "mine.txt")}})
	out, err := run(t, turn, []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, fmt.Sprintf(`
cat %[1]s/inbox/mine.txt; echo
cat %[1]s/inbox/theirs.txt 2>/dev/null || echo theirs-hidden
cat %[1]s/data/golem.db 2>/dev/null || echo store-hidden
`, work))
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"this turn's file", "theirs-hidden"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"another conversation", "store-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("the agent saw %q:\n%s", secret, out)
		}
	}
}
