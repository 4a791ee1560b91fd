package worktree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenMakesAWorktreeOnItsOwnBranch(t *testing.T) {
	repo := newRepo(t, map[string]string{"main.go": "package main\n"})
	head := run(t, repo, "rev-parse", "HEAD")
	ws, opts := newWorkspaces(t)

	w := open(t, ws, repo, "slack:T1:C1")
	if !w.Isolated() || w.Branch != "golem/slack-t1-c1-"+shortHash("slack:T1:C1") {
		t.Fatalf("workspace = %+v", w)
	}
	if !strings.HasPrefix(w.Dir, opts.Root+string(filepath.Separator)) {
		t.Fatalf("worktree %s is not under the root %s", w.Dir, opts.Root)
	}
	if got := run(t, w.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != w.Branch {
		t.Fatalf("worktree is on %q, want %q", got, w.Branch)
	}
	if w.Base != head {
		t.Fatalf("base = %s, want HEAD %s", w.Base, head)
	}
	if read(t, filepath.Join(w.Dir, "main.go")) != "package main\n" {
		t.Fatal("the worktree does not hold the repository's files")
	}
	clean(t, repo)
	if got := run(t, repo, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Fatalf("the main checkout moved to %q", got)
	}
}

func TestSharedIsTheFolderItself(t *testing.T) {
	ws, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() // not a repository: shared needs none
	if err := ws.Check(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	w := open(t, ws, dir, "slack:T1:C1")
	if w.Dir != dir || w.Isolated() {
		t.Fatalf("shared workspace = %+v, want the folder %s", w, dir)
	}
}

func TestCheckRefusesANonRepositoryNamingIsolation(t *testing.T) {
	ws, _ := newWorkspaces(t)
	err := ws.Check(context.Background(), t.TempDir())
	if err == nil || !strings.HasPrefix(err.Error(), "isolation: ") {
		t.Fatalf("Check on a plain folder = %v, want an error naming isolation", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, empty, "init", "-q")
	if err := ws.Check(context.Background(), empty); err == nil || !strings.Contains(err.Error(), "no commit") {
		t.Fatalf("Check on a repository without commits = %v", err)
	}
	repo := newRepo(t, map[string]string{"a": "a"})
	if err := ws.Check(context.Background(), repo); err != nil {
		t.Fatalf("Check on a repository: %v", err)
	}
}

// Two conversations edit the same path at the same time: each edit lands
// in its own worktree, and the main checkout stays clean.
func TestConversationsEditTheSamePathApart(t *testing.T) {
	repo := newRepo(t, map[string]string{"shared.txt": "original\n"})
	ws, _ := newWorkspaces(t)
	const n = 6
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			w, err := ws.Open(context.Background(), repo, fmt.Sprintf("telegram:chat%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			dirs[i] = w.Dir
			if err := os.WriteFile(filepath.Join(w.Dir, "shared.txt"), fmt.Appendf(nil, "edit %d\n", i), 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, d := range dirs {
		if got, want := read(t, filepath.Join(d, "shared.txt")), fmt.Sprintf("edit %d\n", i); got != want {
			t.Errorf("worktree %d has %q, want %q", i, got, want)
		}
	}
	if read(t, filepath.Join(repo, "shared.txt")) != "original\n" {
		t.Error("the main checkout's file changed")
	}
	clean(t, repo)
}

func TestRestartFindsTheSameWorktree(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	ws, opts := newWorkspaces(t)
	first := open(t, ws, repo, "discord:G1:C9")
	write(t, filepath.Join(first.Dir, "work.txt"), "in progress")

	again, err := New(opts) // a new run of golem
	if err != nil {
		t.Fatal(err)
	}
	found, ok, err := again.Find(context.Background(), repo, "discord:G1:C9")
	if err != nil || !ok {
		t.Fatalf("Find after restart = %v, %v", ok, err)
	}
	if found != first {
		t.Fatalf("after a restart %+v, before %+v", found, first)
	}
	if w := open(t, again, repo, "discord:G1:C9"); w != first || read(t, filepath.Join(w.Dir, "work.txt")) != "in progress" {
		t.Fatalf("Open after restart = %+v, want %+v with its work", w, first)
	}
	if _, ok, _ := again.Find(context.Background(), repo, "discord:G1:C10"); ok {
		t.Fatal("Find made up a worktree for a conversation that has none")
	}
}

// Conversation ids come from outside: none may reach a path or a ref
// unescaped.
func TestHostileConversationIDs(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	ws, opts := newWorkspaces(t)
	ids := []string{
		"", ".", "..", "../../../etc/passwd", "slack:T1:../../x", "a/b/c", `a\b`,
		"nul\x00byte", "newline\nand\ttab", strings.Repeat("long", 1000), strings.Repeat("é", 500),
		"日本語のチャンネル", "emoji 🚀🔥", "refs/heads/main", "a..b", "x.lock", "@{-1}", "@",
		"-rf", "--force", "~^:?*[", "trailing.", "/leading/slash", "HEAD", "C1", "c1",
	}
	seen := map[string]string{}
	for _, id := range ids {
		w := open(t, ws, repo, id)
		rel, err := filepath.Rel(opts.Root, w.Tree)
		if err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 1 {
			t.Errorf("id %q: worktree %s escapes the root %s", id, w.Tree, opts.Root)
		}
		if other, dup := seen[w.Tree]; dup {
			t.Errorf("ids %q and %q share the worktree %s", id, other, w.Tree)
		}
		seen[w.Tree] = id
		if got := run(t, repo, "check-ref-format", "--branch", w.Branch); got != w.Branch {
			t.Errorf("id %q: branch %q is not a valid branch name (%q)", id, w.Branch, got)
		}
		if got := run(t, w.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != w.Branch {
			t.Errorf("id %q: worktree is on %q, want %q", id, got, w.Branch)
		}
	}
	clean(t, repo)
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"", "slack:T1:C1:1700000000.123", "../..", "a\x00b", "日本", "x.lock", "@{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		name := Name(id)
		if !validName(name) {
			t.Fatalf("Name(%q) = %q", id, name)
		}
		if Name(id) != name || Branch(id) != "golem/"+name {
			t.Fatalf("Name(%q) is not stable", id)
		}
	})
}

// validName is what every name must look like: safe as a path element
// and as a ref's last part, and short.
func validName(name string) bool {
	if len(name) > maxSlug+13 || len(name) < 14 {
		return false
	}
	slug, hash := name[:len(name)-13], name[len(name)-12:]
	if name[len(name)-13] != '-' || strings.Trim(hash, "0123456789abcdef") != "" {
		return false
	}
	for _, part := range strings.Split(slug, "-") {
		if part == "" || strings.Trim(part, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return false
		}
	}
	return true
}

func TestBaseBranch(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "on main"})
	run(t, repo, "checkout", "-q", "-b", "dev")
	write(t, filepath.Join(repo, "a"), "on dev")
	run(t, repo, "commit", "-q", "-am", "dev")
	dev := run(t, repo, "rev-parse", "HEAD")
	run(t, repo, "checkout", "-q", "main")

	ws, _ := newWorkspaces(t, func(o *Options) { o.BaseBranch = "dev" })
	w := open(t, ws, repo, "slack:T:C")
	if w.Base != dev || read(t, filepath.Join(w.Dir, "a")) != "on dev" {
		t.Fatalf("worktree starts at %s (want dev %s) with a = %q", w.Base, dev, read(t, filepath.Join(w.Dir, "a")))
	}
	bad, _ := newWorkspaces(t, func(o *Options) { o.BaseBranch = "nope" })
	if err := bad.Check(context.Background(), repo); err == nil || !strings.Contains(err.Error(), "base_branch") {
		t.Fatalf("Check with a missing base branch = %v", err)
	}
}

// A channel's own workdir is another repository with worktrees of its own;
// a subfolder of a repository is the same subfolder of the worktree.
func TestEachRepositoryHasItsOwnWorktrees(t *testing.T) {
	one := newRepo(t, map[string]string{"one": "1"})
	two := newRepo(t, map[string]string{"svc/two": "2"})
	ws, _ := newWorkspaces(t)
	a := open(t, ws, one, "slack:T:C")
	b := open(t, ws, filepath.Join(two, "svc"), "slack:T:C")
	if a.Tree == b.Tree || filepath.Dir(a.Tree) == filepath.Dir(b.Tree) {
		t.Fatalf("two repositories share worktrees: %s, %s", a.Tree, b.Tree)
	}
	if read(t, filepath.Join(a.Dir, "one")) != "1" || read(t, filepath.Join(b.Dir, "two")) != "2" {
		t.Fatalf("worktree folders %s, %s do not hold their repository's files", a.Dir, b.Dir)
	}
	if b.Dir != filepath.Join(b.Tree, "svc") {
		t.Fatalf("a workdir in a subfolder works in %s, want the worktree's svc", b.Dir)
	}
}

// What golem puts in a working directory is never a change to commit.
func TestGolemFilesAreExcluded(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	ws, _ := newWorkspaces(t)
	w := open(t, ws, repo, "slack:T:C")
	write(t, filepath.Join(w.Dir, "outbox", "report.pdf"), "%PDF")
	write(t, filepath.Join(w.Dir, "inbox", "upload.png"), "png")
	write(t, filepath.Join(w.Dir, "CLAUDE.md"), "<!-- Generated by golem -->")
	if err := os.MkdirAll(filepath.Join(w.Dir, ".claude", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nowhere", filepath.Join(w.Dir, ".claude", "skills", "general")); err != nil {
		t.Fatal(err)
	}
	clean(t, w.Dir)
	before := read(t, filepath.Join(repo, ".git", "info", "exclude"))
	open(t, ws, repo, "slack:T:C2")
	if after := read(t, filepath.Join(repo, ".git", "info", "exclude")); after != before {
		t.Fatalf("info/exclude grew again:\n%s", after)
	}
}

// A worktree deleted by hand is made again rather than failing forever;
// its branch and commits are kept.
func TestAWorktreeRemovedByHandComesBack(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	ws, opts := newWorkspaces(t)
	w := open(t, ws, repo, "slack:T:C")
	write(t, filepath.Join(w.Dir, "b"), "b")
	run(t, w.Dir, "add", "b")
	run(t, w.Dir, "commit", "-q", "-m", "b")
	if err := os.RemoveAll(w.Tree); err != nil {
		t.Fatal(err)
	}
	again, _ := New(opts)
	w2 := open(t, again, repo, "slack:T:C")
	if w2.Tree != w.Tree || w2.Base != w.Base || read(t, filepath.Join(w2.Dir, "b")) != "b" {
		t.Fatalf("re-created %+v (want %+v with its commit)", w2, w)
	}
}

func TestGitIsBoundedInTime(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := git(ctx, 0, t.TempDir(), "version"); err == nil {
		t.Fatal("git ran with a cancelled context")
	}
}
