package sandbox

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPrivate: a Private state folder is the working directory's own
// inside: the real folder's shared entries read-only, its through
// entries writable (a write reaches the real file), nothing else of it;
// what the agent makes stays in the working directory's folder, seen by
// its next turn and not by another working directory's; a symlink to a
// hidden file is not shown; a shared entry the operator removed or
// added later is followed, whatever the agent left in its place.
func TestPrivate(t *testing.T) {
	f := newFixture(t)
	real := filepath.Join(f.home, ".cli")
	for path, body := range map[string]string{
		filepath.Join(real, "shared.conf"):             "operator settings",
		filepath.Join(real, "login.json"):              "old token",
		filepath.Join(real, "sessions", "a", "s1.log"): "a's session",
		filepath.Join(real, "sessions", "b", "s2.log"): "b's session",
		filepath.Join(real, "history"):                 "every prompt",
	} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(f.config, filepath.Join(real, "linked.conf")); err != nil {
		t.Fatal(err)
	}
	var logged logs
	state := filepath.Join(f.store, "agent-state")
	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}, StateDir: state,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	a, b := filepath.Join(f.work, "a"), filepath.Join(f.work, "b")
	os.MkdirAll(a, 0o755)
	os.MkdirAll(b, 0o755)
	in := func(workdir, script string) string {
		t.Helper()
		p := Private{Dir: real, Shared: []string{"shared.conf", "linked.conf", "later.conf"},
			Through: []Through{{Path: "login.json"}, {Path: filepath.Join("sessions", filepath.Base(workdir)), Dir: true}},
			Seed: func(own *os.Root) error {
				if _, err := own.Lstat("seeded"); err == nil {
					return nil
				}
				return own.WriteFile("seeded", []byte("seeded by golem"), 0o600)
			}}
		turn := s.Turn(Config{}, Place{Workdir: workdir})
		j, err := turn.Wrap(Command{Path: "/bin/sh", Args: []string{"-c", script}, Env: f.env, Private: []Private{p}})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		out, _ := runJail(t, j)
		return out
	}
	out := in(a, `cd $HOME/.cli
cat shared.conf; echo
echo x > shared.conf 2>&1 || echo shared-readonly
cat linked.conf history sessions/b/s2.log 2>&1
cat sessions/a/s1.log; echo
echo new token > login.json
echo mine > mine.txt && cat seeded && echo
ln -s /etc/hostname later.conf
ls -A`)
	for _, want := range []string{"operator settings", "shared-readonly", "a's session", "seeded by golem"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first turn's output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"xoxb-secret", "every prompt", "b's session"} {
		if strings.Contains(out, secret) {
			t.Errorf("the agent saw %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(logged.String(), "symlink") {
		t.Errorf("no warning of the symlink not shown: %s", logged.String())
	}
	for path, want := range map[string]string{filepath.Join(real, "login.json"): "new token\n", filepath.Join(real, "shared.conf"): "operator settings"} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("%s holds %q, want %q", path, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(real, "mine.txt")); err == nil {
		t.Error("what the agent made landed in the real folder")
	}

	if out := in(b, "cat $HOME/.cli/mine.txt 2>&1; ls -A $HOME/.cli/sessions"); strings.Contains(out, "mine\n") || strings.TrimSpace(strings.Split(out, "\n")[1]) != "b" {
		t.Errorf("another working directory's turn: %q; want neither a's file nor a's sessions", out)
	}

	os.Remove(filepath.Join(real, "shared.conf"))
	os.WriteFile(filepath.Join(real, "later.conf"), []byte("added later"), 0o644)
	out = in(a, "cd $HOME/.cli; cat mine.txt later.conf; echo; ls -A")
	if !strings.Contains(out, "mine\nadded later") {
		t.Errorf("a's next turn: %q; want its own file and the operator's later one", out)
	}
	if strings.Contains(out, "shared.conf") {
		t.Errorf("a removed shared entry left its mount point behind: %q", out)
	}
}

// TestPrivateBelowState: a Private below a State folder (a part of a
// shared folder each working directory's own) is made through that
// folder: a broken symlink where it goes, and one to a folder, are
// replaced by a folder (and logged), golem makes nothing where they led,
// and what the agent writes there lands in its own folder, not the
// shared one nor where a link led.
func TestPrivateBelowState(t *testing.T) {
	f := newFixture(t)
	shared := filepath.Join(f.home, ".data", "cli")
	elsewhere, disk := filepath.Join(f.home, "elsewhere"), filepath.Join(f.home, "disk")
	os.MkdirAll(disk, 0o755)
	os.MkdirAll(shared, 0o755)
	if err := os.WriteFile(filepath.Join(disk, "keep"), []byte("on another disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlinks(t, shared, map[string]string{"snap": filepath.Join(elsewhere, "snap"), "logs": disk})
	out, logged, err := runLogged(t, f, Command{Args: []string{"-c", `cd $HOME/.data/cli && echo s > snap/mine && echo l > logs/mine && echo d > shared.txt && ls logs`},
		State: []string{shared}, Private: []Private{{Dir: filepath.Join(shared, "snap")}, {Dir: filepath.Join(shared, "logs")}}})
	if err != nil || strings.TrimSpace(out) != "mine" {
		t.Fatalf("the agent's writes: %v, %q; want its own logs folder with its file alone", err, out)
	}
	for _, name := range []string{"snap", "logs"} {
		fi, err := os.Lstat(filepath.Join(shared, name))
		if err != nil || !fi.IsDir() {
			t.Errorf("%s: %v, %v; want the link replaced by a folder", name, fi, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(shared, name)); len(entries) != 0 {
			t.Errorf("the shared %s holds %v; the agent's file belongs in its own", name, entries)
		}
	}
	if _, err := os.Lstat(elsewhere); err == nil {
		t.Error("golem made a folder where the broken link led")
	}
	if entries, _ := os.ReadDir(disk); len(entries) != 1 {
		t.Errorf("the folder a link led to holds %v, want its file alone", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(shared, "shared.txt")); string(b) != "d\n" {
		t.Errorf("the shared folder's own file holds %q, want the agent's write", b)
	}
	if !strings.Contains(logged, "is replaced by a folder") {
		t.Errorf("no warning of the replaced links: %s", logged)
	}
}

// TestPrivateThroughFolderLink: a writable folder of the real Dir
// (OpenCode's locks, the working directory's own sessions) that is a
// symlink is replaced by a folder (logged), not followed: an agent may
// have left it while that state folder was shared and writable (before
// it was a Private), and golem would otherwise show where it leads
// writable in every sandbox ($HOME: a .bashrc the next shell runs) or,
// for a broken one, make that folder; the folder it led to stays as it
// was.
func TestPrivateThroughFolderLink(t *testing.T) {
	f := newFixture(t)
	real := filepath.Join(f.home, ".state", "cli")
	nowhere := filepath.Join(f.home, "nowhere")
	os.MkdirAll(filepath.Join(real, "sessions"), 0o755)
	symlinks(t, real, map[string]string{"locks": f.outside, filepath.Join("sessions", "a"): nowhere})
	out, logged, err := runLogged(t, f, Command{Args: []string{"-c", `cd $HOME/.state/cli && echo l > locks/mine && echo s > sessions/a/mine && ls locks`},
		Private: []Private{{Dir: real, Through: []Through{{Path: "locks", Dir: true}, {Path: filepath.Join("sessions", "a"), Dir: true}}}}})
	if err != nil || strings.TrimSpace(out) != "mine" {
		t.Errorf("the agent's writes: %v, %q; want a locks folder with its file alone", err, out)
	}
	if entries, _ := os.ReadDir(f.outside); len(entries) != 1 {
		t.Errorf("the folder the link led to holds %v, want its file alone", entries)
	}
	if _, err := os.Lstat(nowhere); err == nil {
		t.Error("golem made a folder where the broken link led")
	}
	for _, name := range []string{"locks", filepath.Join("sessions", "a")} {
		if b, err := os.ReadFile(filepath.Join(real, name, "mine")); err != nil {
			t.Errorf("the real %s: %v; want the agent's file in a folder of its own", name, err)
		} else if fi, _ := os.Lstat(filepath.Join(real, name)); !fi.IsDir() {
			t.Errorf("the real %s is %v with %q; want a folder", name, fi.Mode(), b)
		}
	}
	if !strings.Contains(logged, "is replaced by a folder") {
		t.Errorf("no warning of the replaced links: %s", logged)
	}
}

// TestPrivateThroughLinksNotFollowed: a symlink in a Through file's
// place, or above a Through entry, is not followed (an agent may have
// left it while the folder was shared, leading to ~/.bashrc): the entry
// is not shown, a warning says so, and what the link led to is neither
// written nor made.
func TestPrivateThroughLinksNotFollowed(t *testing.T) {
	f := newFixture(t)
	real := filepath.Join(f.home, ".cli")
	os.MkdirAll(real, 0o755)
	bashrc := filepath.Join(f.outside, "bashrc")
	if err := os.WriteFile(bashrc, []byte("operator's"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlinks(t, real, map[string]string{"login.json": bashrc, "projects": f.outside})
	// A link of the operator's where the projects link leads to a's place.
	nowhere := filepath.Join(f.home, "nowhere")
	symlinks(t, f.outside, map[string]string{"a": nowhere})
	out, logged, err := runLogged(t, f, Command{Args: []string{"-c", `cd $HOME/.cli && echo planted > login.json; mkdir -p projects/a && echo planted > projects/a/f; cat login.json`},
		Private: []Private{{Dir: real, Through: []Through{{Path: "login.json"}, {Path: filepath.Join("projects", "a"), Dir: true}}}}})
	if err != nil || strings.TrimSpace(out) != "planted" {
		t.Errorf("the agent's writes: %v, %q; want them in its own folder", err, out)
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "operator's" {
		t.Errorf("the file the login's link led to holds %q", b)
	}
	if to, err := os.Readlink(filepath.Join(f.outside, "a")); err != nil || to != nowhere {
		t.Errorf("the link where the projects link led: %q, %v; want it as it was", to, err)
	}
	if _, err := os.Lstat(nowhere); err == nil {
		t.Error("golem made, or the agent wrote, a folder where the projects link led")
	}
	if n := strings.Count(logged, "is not followed"); n != 2 {
		t.Errorf("%d warnings of links not followed, want 2: %s", n, logged)
	}
}

// TestForget: the state a working directory kept of its own goes with
// it, unless a sandbox is using it, and another working directory's
// stays.
func TestForget(t *testing.T) {
	f := newFixture(t)
	state := filepath.Join(f.store, "agent-state")
	s := need(t, Config{Network: None}, Options{StateDir: state})
	a, b := filepath.Join(f.work, "a"), filepath.Join(f.work, "b")
	p := Private{Dir: filepath.Join(f.home, ".cli")}
	wrap := func(workdir string) *Jail {
		j, err := s.Turn(Config{}, Place{Workdir: workdir}).Wrap(Command{Path: "/bin/true", Env: f.env, Private: []Private{p}})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	wrap(a).Close()
	jb := wrap(b)
	if err := s.Forget(b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, stateKey(b))); err != nil {
		t.Errorf("a state folder in use was removed: %v", err)
	}
	jb.Close()
	if err := s.Forget(a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, stateKey(b))); err != nil {
		t.Errorf("forgetting one working directory removed another's: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, stateKey(a))); err == nil {
		t.Error("a forgotten working directory's state is still there")
	}
	if err := s.Forget(b); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("left in the state folder: %v", entries)
	}
	var none *Sandbox
	if err := none.Forget(a); err != nil {
		t.Error(err)
	}
}

// TestPrivateAfterHoldsOffTheNextTurn: a working directory's next
// sandbox neither sets up nor starts while the last one's After runs on
// its folder. After moves what the agent wrote out of that folder
// (Codex's rollouts, checked for the working directory they record), so
// an agent running meanwhile could change a file between golem's check
// and its copy, or have golem copy one it is still writing.
func TestPrivateAfterHoldsOffTheNextTurn(t *testing.T) {
	f := newFixture(t)
	real := filepath.Join(f.home, ".cli")
	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}, StateDir: filepath.Join(f.store, "agent-state")})
	entered, release := make(chan struct{}), make(chan struct{})
	var afters atomic.Int32
	p := Private{Dir: real, After: func(*os.Root) {
		if afters.Add(1) == 1 {
			close(entered)
			<-release
		}
	}}
	wrap := func() *Jail {
		j, err := s.Turn(Config{}, Place{Workdir: f.work}).Wrap(Command{Path: "/bin/true", Env: f.env, Private: []Private{p}})
		if err != nil {
			t.Error(err)
			return nil
		}
		return j
	}
	first := wrap()
	closed := make(chan struct{})
	go func() { first.Close(); close(closed) }()
	<-entered
	next := make(chan *Jail, 1)
	go func() { next <- wrap() }()
	select {
	case j := <-next:
		t.Error("the next sandbox was wrapped while the last one's After ran")
		if j != nil {
			j.Close()
		}
		close(release)
		<-closed
		return
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	<-closed
	if j := <-next; j != nil {
		j.Close()
	}
	if n := afters.Load(); n != 2 {
		t.Errorf("After ran %d times, want once for each sandbox that was the last", n)
	}
}

// symlinks makes each link below dir, to its target.
func symlinks(t *testing.T, dir string, links map[string]string) {
	t.Helper()
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// runLogged runs c in a sandbox of f's (network: none) in f.work, and
// returns its output and what the sandbox logged.
func runLogged(t *testing.T, f fixture, c Command) (out, logged string, err error) {
	t.Helper()
	var l logs
	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}, StateDir: filepath.Join(f.store, "agent-state"),
		Logger: slog.New(slog.NewTextHandler(&l, nil))})
	c.Path, c.Env = "/bin/sh", f.env
	j, err := s.Turn(Config{}, Place{Workdir: f.work}).Wrap(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err = runJail(t, j)
	j.Close()
	return out, l.String(), err
}
