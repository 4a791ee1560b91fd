package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// age makes w look idle since long ago.
func age(tb testing.TB, w Workspace) {
	tb.Helper()
	old := time.Now().Add(-400 * time.Hour)
	if err := os.Chtimes(w.Tree, old, old); err != nil {
		tb.Fatal(err)
	}
}

func commit(tb testing.TB, w Workspace, file string) {
	tb.Helper()
	write(tb, filepath.Join(w.Dir, file), file)
	run(tb, w.Dir, "add", file)
	run(tb, w.Dir, "commit", "-q", "-m", file)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func TestCleanupRemovesOnlyWhatLosesNothing(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a"})
	remote := filepath.Join(t.TempDir(), "remote.git")
	run(t, repo, "init", "-q", "--bare", remote)
	run(t, repo, "remote", "add", "origin", remote)
	ws, _ := newWorkspaces(t)

	untouched := open(t, ws, repo, "slack:T:untouched") // nothing done: merged trivially
	age(t, untouched)
	dirty := open(t, ws, repo, "slack:T:dirty")
	write(t, filepath.Join(dirty.Dir, "a"), "changed, not committed")
	age(t, dirty)
	fresh := open(t, ws, repo, "slack:T:new-file")
	write(t, filepath.Join(fresh.Dir, "new.txt"), "untracked")
	age(t, fresh)
	local := open(t, ws, repo, "slack:T:local-commit")
	commit(t, local, "local.txt")
	age(t, local)
	pushed := open(t, ws, repo, "slack:T:pushed")
	commit(t, pushed, "pushed.txt")
	run(t, pushed.Dir, "push", "-q", "origin", pushed.Branch)
	age(t, pushed)
	merged := open(t, ws, repo, "slack:T:merged")
	commit(t, merged, "merged.txt")
	run(t, repo, "merge", "-q", "--ff-only", merged.Branch)
	age(t, merged)
	recent := open(t, ws, repo, "slack:T:recent") // clean but not idle
	outboxOnly := open(t, ws, repo, "slack:T:outbox")
	write(t, filepath.Join(outboxOnly.Dir, "outbox", "sent.txt"), "already sent")
	age(t, outboxOnly)

	surveyed, err := ws.Survey(context.Background(), time.Now())
	if err != nil || len(surveyed) != 3 || !exists(untouched.Tree) {
		t.Fatalf("Survey kept %d (want the 3 with work) and must remove nothing: %v", len(surveyed), err)
	}
	removed, kept, err := ws.Cleanup(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	for _, w := range removed {
		gone[w.Tree] = true
	}
	for _, w := range []Workspace{untouched, pushed, merged, outboxOnly} {
		if !gone[w.Tree] || exists(w.Tree) {
			t.Errorf("%s was not removed", w.Branch)
		}
	}
	reasons := map[string]string{}
	for _, k := range kept {
		reasons[k.Tree] = k.Reason
		if k.Idle < 399*time.Hour || k.Conversation == "" {
			t.Errorf("kept %+v: idle time or conversation missing", k)
		}
	}
	for w, want := range map[Workspace]string{
		dirty: "uncommitted changes", fresh: "uncommitted changes", local: "commits neither merged nor pushed",
	} {
		if reasons[w.Tree] != want || !exists(w.Tree) {
			t.Errorf("%s: kept for %q (exists %v), want kept for %q", w.Branch, reasons[w.Tree], exists(w.Tree), want)
		}
	}
	if len(kept) != 3 || len(ws.Kept()) != 3 {
		t.Errorf("kept %d (Kept() %d), want 3", len(kept), len(ws.Kept()))
	}
	if !exists(recent.Tree) || gone[recent.Tree] {
		t.Error("a worktree used recently was removed")
	}
	if read(t, filepath.Join(dirty.Dir, "a")) != "changed, not committed" {
		t.Error("uncommitted work was touched")
	}
	branches := run(t, repo, "branch", "--list", "golem/*", "--format=%(refname:short)")
	for _, want := range []struct {
		w    Workspace
		stay bool
	}{{untouched, false}, {merged, false}, {pushed, true}, {local, true}, {dirty, true}} {
		if has := contains(branches, want.w.Branch); has != want.stay {
			t.Errorf("branch %s present = %v, want %v", want.w.Branch, has, want.stay)
		}
	}
	clean(t, repo)

	// The conversation comes back: its pushed branch is checked out again.
	back := open(t, ws, repo, "slack:T:pushed")
	if read(t, filepath.Join(back.Dir, "pushed.txt")) != "pushed.txt" || back.Base != pushed.Base {
		t.Fatalf("after cleanup the conversation got %+v without its commits", back)
	}
}

func contains(lines, s string) bool { return slices.Contains(strings.Split(lines, "\n"), s) }
