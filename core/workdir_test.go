package core_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/worktree"
)

// gitRepo makes a repository with one commit holding files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// worktrees returns Workspaces making worktrees under root.
func worktrees(t *testing.T, root string) *worktree.Workspaces {
	t.Helper()
	ws, err := worktree.New(worktree.Options{Isolation: worktree.Worktree, Root: root, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// sayIn sends text from alice in channel and returns its events.
func (h *harness) sayIn(channel, text string) *core.EventQueue {
	q := core.NewEventQueue()
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: channel, User: "alice", Text: text, Sink: q.Push})
	return q
}

// Two conversations edit the same path at the same time, each in its own
// worktree; the main checkout stays clean; after a restart each finds its
// worktree again.
func TestConversationsWorkInWorktreesOfTheirOwn(t *testing.T) {
	repo := gitRepo(t, map[string]string{"shared.txt": "original\n"})
	root := filepath.Join(t.TempDir(), "worktrees")
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Workspace, o.Workdirs = repo, worktrees(t, root)
	})
	a := h.sayIn("C1", "!write shared.txt from C1\n!sleep 100ms\nwrote")
	b := h.sayIn("C2", "!write shared.txt from C2\n!sleep 100ms\nwrote")
	for _, q := range []*core.EventQueue{a, b} {
		if ev := terminal(t, q); ev.Type != parser.Done {
			t.Fatalf("turn ended %+v", ev)
		}
	}
	inv := enginetest.ReadLog(t, h.log)
	if len(inv) != 2 || inv[0].Cwd == inv[1].Cwd {
		t.Fatalf("the two conversations did not get folders of their own: %+v", inv)
	}
	dirs := map[string]string{}
	for _, i := range inv {
		if !strings.HasPrefix(i.Cwd, root+string(filepath.Separator)) {
			t.Errorf("the agent ran in %s, not in a worktree under %s", i.Cwd, root)
		}
		got, err := os.ReadFile(filepath.Join(i.Cwd, "shared.txt"))
		if err != nil {
			t.Fatal(err)
		}
		dirs[string(got)] = i.Cwd
	}
	if len(dirs) != 2 || dirs["from C1"] == "" || dirs["from C2"] == "" {
		t.Errorf("each worktree should hold its own edit, got %v", dirs)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "shared.txt")); string(got) != "original\n" {
		t.Errorf("the main checkout's file changed to %q", got)
	}
	if st := gitIn(t, repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the main checkout is not clean:\n%s", st)
	}

	h.stop()
	h.opts.Workdirs = worktrees(t, root) // a new run of golem
	h.start()
	if ev := terminal(t, h.sayIn("C1", "again")); ev.Type != parser.Done {
		t.Fatalf("turn after restart ended %+v", ev)
	}
	inv = enginetest.ReadLog(t, h.log)
	if inv[2].Cwd != dirs["from C1"] {
		t.Errorf("after a restart C1 works in %s, before in %s", inv[2].Cwd, dirs["from C1"])
	}
}

func TestAWorktreeThatCannotBeMadeIsTold(t *testing.T) {
	plain := t.TempDir() // not a repository (cmd/bot refuses this at start)
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Workspace, o.Workdirs = plain, worktrees(t, filepath.Join(t.TempDir(), "wt"))
	})
	ev := terminal(t, h.sayIn("C1", "hi"))
	if ev.Type != parser.Error || !strings.Contains(ev.Message, "working directory") {
		t.Fatalf("terminal = %+v, want an error about the working directory", ev)
	}
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 0 {
		t.Errorf("the agent ran anyway: %+v", inv)
	}
}
