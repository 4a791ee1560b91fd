package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// /diff shows commits, uncommitted changes and new files since the branch
// started, and changes nothing.
func TestDiffHasCommittedUncommittedAndNewFiles(t *testing.T) {
	repo := newRepo(t, map[string]string{"committed.txt": "one\n", "edited.txt": "before\n", "gone.txt": "bye\n"})
	ws, _ := newWorkspaces(t)
	w := open(t, ws, repo, "slack:T:C")
	write(t, filepath.Join(w.Dir, "committed.txt"), "one\ntwo\n")
	run(t, w.Dir, "commit", "-q", "-am", "two")
	write(t, filepath.Join(w.Dir, "edited.txt"), "after\n")
	if err := os.Remove(filepath.Join(w.Dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "dir", "new.txt"), "brand new\n")
	write(t, filepath.Join(w.Dir, "outbox", "report.txt"), "not a change")
	statusBefore := run(t, w.Dir, "status", "--porcelain")
	// The main checkout moving on is not this conversation's change.
	write(t, filepath.Join(repo, "committed.txt"), "main moved\n")
	run(t, repo, "commit", "-q", "-am", "main")

	c, err := ws.Diff(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"diff --git a/committed.txt b/committed.txt", "+two",
		"diff --git a/edited.txt b/edited.txt", "-before", "+after",
		"diff --git a/gone.txt b/gone.txt", "deleted file mode",
		"diff --git a/dir/new.txt b/dir/new.txt", "new file mode", "+brand new",
	} {
		if !strings.Contains(c.Patch, want) {
			t.Errorf("the diff lacks %q:\n%s", want, c.Patch)
		}
	}
	if strings.Contains(c.Patch, "outbox") || strings.Contains(c.Patch, "main moved") {
		t.Errorf("the diff shows what is not the conversation's change:\n%s", c.Patch)
	}
	if c.Summary != "4 files changed, 3 insertions(+), 2 deletions(-)" {
		t.Errorf("summary = %q", c.Summary)
	}
	if after := run(t, w.Dir, "status", "--porcelain"); after != statusBefore {
		t.Errorf("Diff changed the worktree's status:\n%s\nwas\n%s", after, statusBefore)
	}

	fresh := open(t, ws, repo, "slack:T:other")
	if c, err := ws.Diff(context.Background(), fresh); err != nil || c.Patch != "" {
		t.Errorf("a worktree without changes has diff %q, %v", c.Patch, err)
	}
}

func TestRunFillsInTheBranchInTheWorktree(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	ws, _ := newWorkspaces(t)
	w := open(t, ws, repo, "slack:T:C")
	c, err := Run(context.Background(), w, `echo "https://example.com/pr/{branch}"; pwd; echo oops >&2`, time.Minute, 1000)
	if err != nil || c.Err != nil {
		t.Fatal(err, c.Err)
	}
	if want := "https://example.com/pr/" + w.Branch + "\n" + w.Dir + "\noops\n"; c.Output != want || c.Truncated {
		t.Errorf("output %q (truncated %v), want %q", c.Output, c.Truncated, want)
	}

	c, _ = Run(context.Background(), w, `yes | head -c 100000; exit 3`, time.Minute, 100)
	if len(c.Output) != 100 || !c.Truncated || c.Err == nil || !strings.Contains(c.Err.Error(), "exit status 3") {
		t.Errorf("a long failing command: %d bytes, truncated %v, err %v", len(c.Output), c.Truncated, c.Err)
	}

	c, _ = Run(context.Background(), w, `echo started; sleep 600`, 200*time.Millisecond, 100)
	if !errors.Is(c.Err, context.DeadlineExceeded) || c.Output != "started\n" {
		t.Errorf("a command that hangs: err %v, output %q", c.Err, c.Output)
	}
}

// A worktree's index the agent (which writes the worktree's git folder)
// turned into a FIFO or a symlink to /dev/zero or a file of golem's does
// not have /diff block, fill the host's temporary folder, or read what it
// points at: golem copies only a regular file there.
func TestDiffRefusesAnIndexThatIsNotAFile(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	ws, _ := newWorkspaces(t)
	w := open(t, ws, repo, "slack:T:C")
	index := strings.TrimSpace(run(t, w.Dir, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	secret := filepath.Join(t.TempDir(), "golem.db")
	write(t, secret, "store-secret")
	for name, plant := range map[string]func() error{
		"a FIFO":              func() error { return syscall.Mkfifo(index, 0o644) },
		"a symlink to a file": func() error { return os.Symlink(secret, index) },
		"a symlink to a FIFO": func() error { p := index + ".fifo"; syscall.Mkfifo(p, 0o644); return os.Symlink(p, index) },
	} {
		os.Remove(index)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := ws.Diff(context.Background(), w); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("an index that is %s: Diff took it", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("an index that is %s: Diff blocked", name)
		}
	}
}
