package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/worktree"
)

// doctor lists the idle worktrees that cleanup keeps for their work, and
// changes nothing.
func TestDoctorListsWorktreesKeptForTheirWork(t *testing.T) {
	doctorEnv(t)
	dir := t.TempDir()
	repo := filepath.Join(dir, "ws")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitRun(repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(repo, "add", "a.txt")
	gitRun(repo, "commit", "-q", "-m", "first")

	ws, err := worktree.New(worktree.Options{Isolation: worktree.Worktree, Root: filepath.Join(dir, "data", "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ws.Open(context.Background(), repo, "slack:T1:C1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir, "a.txt"), []byte("unsaved"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-500 * time.Hour)
	if err := os.Chtimes(w.Tree, old, old); err != nil {
		t.Fatal(err)
	}

	config := fmt.Sprintf(`workspace: ./ws
store: ./data/golem.db
isolation: worktree
engines:
  claude-code: {command: %q, api_key: "sk-ant-test-key-1234"}
  cursor: {command: /nonexistent/agent}
  codex: {command: /nonexistent/codex}
  gemini: {command: /nonexistent/gemini}
http: {listen: ""}
`, fakeCLI(t, `echo 1.0`))
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	_ = runDoctor(context.Background(), []string{"--config", path}, &out, &errOut, testLimits)
	l := line(out.String(), "worktrees")
	if !strings.HasPrefix(l, "--") || !strings.Contains(l, w.Tree) || !strings.Contains(l, w.Branch) || !strings.Contains(l, "uncommitted changes") {
		t.Fatalf("worktrees line %q; want a note naming the kept worktree:\n%s", l, out.String())
	}
	if got, _ := os.ReadFile(filepath.Join(w.Dir, "a.txt")); string(got) != "unsaved" {
		t.Errorf("doctor touched the kept work: %q", got)
	}
}
