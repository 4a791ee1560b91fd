package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestWorktree: with isolation: worktree the agent commits on its own
// branch in its own worktree, and writes nothing else of the repository:
// not the main checkout's files, not another branch's ref, not
// .git/hooks; another conversation's worktree is not there at all.
func TestWorktree(t *testing.T) {
	f := newFixture(t)
	repo := f.work
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "README")
	git(t, repo, "commit", "-q", "-m", "first")
	root := filepath.Join(f.store, "worktrees", "repo-1")
	mine, theirs := filepath.Join(root, "mine"), filepath.Join(root, "theirs")
	git(t, repo, "worktree", "add", "-q", "-b", "golem/mine", mine)
	git(t, repo, "worktree", "add", "-q", "-b", "golem/theirs", theirs)
	os.WriteFile(filepath.Join(theirs, "their-work.txt"), []byte("their secret work"), 0o644)
	theirRef := git(t, repo, "rev-parse", "golem/theirs")
	status := git(t, repo, "status", "--porcelain")

	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}})
	turn := s.Turn(Config{}, Place{Workdir: mine, Tree: mine, Repo: repo, Branch: "golem/mine"})
	env := append(f.env, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=a@a")
	out, err := run(t, turn, env, `
echo change > work.txt && git add work.txt && git commit -q -m "agent's commit" && echo committed
echo x >> `+repo+`/README 2>/dev/null || echo main-checkout-readonly
git update-ref refs/heads/golem/theirs HEAD 2>/dev/null || echo their-ref-readonly
git branch new-branch 2>/dev/null || echo new-branch-refused
echo x > `+repo+`/.git/hooks/pre-commit 2>/dev/null || echo hooks-readonly
cat `+theirs+`/their-work.txt 2>/dev/null || echo theirs-hidden
ls `+root+`
`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"committed", "main-checkout-readonly", "their-ref-readonly", "new-branch-refused", "hooks-readonly", "theirs-hidden"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "their secret work") {
		t.Errorf("the agent read another conversation's worktree:\n%s", out)
	}
	if got := git(t, repo, "log", "-1", "--format=%s", "golem/mine"); got != "agent's commit" {
		t.Errorf("golem/mine's last commit is %q, want the agent's", got)
	}
	if got := git(t, repo, "rev-parse", "golem/theirs"); got != theirRef {
		t.Errorf("golem/theirs moved to %s", got)
	}
	if got := git(t, repo, "status", "--porcelain"); got != status {
		t.Errorf("the main checkout changed: %s", got)
	}
}

// TestWorktreePointers: the files that tie the worktree to its repository
// (its .git file; gitdir, commondir and config.worktree in its
// .git/worktrees/<name>) stay as they are, while a commit still works;
// and a HEAD the agent turns to main does not make main's ref writable in
// the next turn, which takes golem's word for the branch.
func TestWorktreePointers(t *testing.T) {
	f := newFixture(t)
	repo := f.work
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "README")
	git(t, repo, "commit", "-q", "-m", "first")
	mine := filepath.Join(f.store, "worktrees", "repo-1", "mine")
	git(t, repo, "worktree", "add", "-q", "-b", "golem/mine", mine)
	admin := filepath.Join(repo, ".git", "worktrees", "mine")
	pointers := []string{filepath.Join(mine, ".git"), filepath.Join(admin, "gitdir"), filepath.Join(admin, "commondir"), filepath.Join(admin, "config.worktree")}
	main := git(t, repo, "rev-parse", "main")

	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}})
	place := Place{Workdir: mine, Tree: mine, Repo: repo, Branch: "golem/mine"}
	env := append(f.env, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=a@a")
	script := "echo change > work.txt && git add work.txt && git commit -q -m \"agent's commit\" && echo committed\n"
	for _, p := range pointers {
		script += "echo /elsewhere > " + p + " 2>/dev/null && echo 'wrote " + p + "' || echo 'kept " + p + "'\n"
	}
	script += "git symbolic-ref HEAD refs/heads/main && echo head-turned\n"
	out, err := run(t, s.Turn(Config{}, place), env, script)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"committed", "head-turned"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, p := range pointers {
		if !strings.Contains(out, "kept "+p) {
			t.Errorf("the agent wrote %s:\n%s", p, out)
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "/elsewhere") {
			t.Errorf("%s now holds %q", p, b)
		}
	}
	if got := git(t, repo, "log", "-1", "--format=%s", "golem/mine"); got != "agent's commit" {
		t.Errorf("golem/mine's last commit is %q, want the agent's", got)
	}

	out, err = run(t, s.Turn(Config{}, place), env, "git update-ref refs/heads/main golem/mine 2>/dev/null && echo moved-main || echo main-readonly\n")
	if err != nil || !strings.Contains(out, "main-readonly") {
		t.Errorf("the next turn, HEAD on main: %v: %s", err, out)
	}
	if got := git(t, repo, "rev-parse", "main"); got != main {
		t.Errorf("main moved to %s", got)
	}
}

// TestWorktreeRefSymlinks: symlinks the agent leaves in its branch's ref
// folder (refs/heads/golem, which every conversation's branch shares)
// are not the other branches' refs: the next turn does not bind them
// read-only where they lead, so a relative one to the config file or a
// masked credential folder shows it no more than before (found by
// review: bwrap bound what they pointed at over the masks).
func TestWorktreeRefSymlinks(t *testing.T) {
	f := newFixture(t)
	repo := f.work
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "README")
	git(t, repo, "commit", "-q", "-m", "first")
	mine := filepath.Join(f.store, "worktrees", "repo-1", "mine")
	git(t, repo, "worktree", "add", "-q", "-b", "golem/mine", mine)
	s := need(t, Config{Network: None}, Options{Hide: []string{f.store, f.config}})
	place := Place{Workdir: mine, Tree: mine, Repo: repo, Branch: "golem/mine"}
	refs := filepath.Join(repo, ".git", "refs", "heads", "golem")
	up, _ := filepath.Rel(refs, filepath.Dir(f.home)) // to the fixture's root
	out, err := run(t, s.Turn(Config{}, place), f.env, "cd "+refs+" && ln -s "+up+"/home/.ssh ssh && ln -s "+up+"/bot.yaml config && echo planted")
	if err != nil || !strings.Contains(out, "planted") {
		t.Fatalf("the first turn: %v: %s", err, out)
	}
	out, err = run(t, s.Turn(Config{}, place), f.env, "cat "+refs+"/ssh/id_ed25519 "+f.home+"/.ssh/id_ed25519 "+refs+"/config "+f.config+" 2>&1; true")
	if err != nil {
		t.Fatalf("the next turn: %v: %s", err, out)
	}
	for _, secret := range []string{"PRIVATE KEY", "xoxb-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("the next turn saw %q through a symlink in the ref folder:\n%s", secret, out)
		}
	}
}
