package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run runs git in dir for a test, failing it on error.
func run(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	args = append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s in %s: %v\n%s", strings.Join(args[8:], " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with files (path → content) in one commit.
func newRepo(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	run(tb, dir, "init", "-q")
	for p, content := range files {
		write(tb, filepath.Join(dir, p), content)
	}
	run(tb, dir, "add", "-A")
	run(tb, dir, "commit", "-q", "-m", "first")
	return dir
}

func write(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func read(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// newWorkspaces is Workspaces in worktree mode with a fresh root.
func newWorkspaces(tb testing.TB, tune ...func(*Options)) (*Workspaces, Options) {
	tb.Helper()
	opts := Options{Isolation: Worktree, Root: filepath.Join(tb.TempDir(), "worktrees"), GitTimeout: time.Minute}
	for _, f := range tune {
		f(&opts)
	}
	ws, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return ws, opts
}

func open(tb testing.TB, ws *Workspaces, folder, conv string) Workspace {
	tb.Helper()
	w, err := ws.Open(context.Background(), folder, conv)
	if err != nil {
		tb.Fatalf("open %q: %v", conv, err)
	}
	return w
}

// clean fails tb unless the checkout at dir has no change at all.
func clean(tb testing.TB, dir string) {
	tb.Helper()
	if st := run(tb, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		tb.Fatalf("%s is not clean:\n%s", dir, st)
	}
}
