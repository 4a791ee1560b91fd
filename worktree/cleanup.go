package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Kept is an idle worktree that Cleanup did not remove because something
// would be lost.
type Kept struct {
	Workspace
	Conversation string
	Idle         time.Duration
	// Reason says what would be lost: "uncommitted changes" or "commits
	// neither merged nor pushed".
	Reason string
}

// Cleanup removes the worktrees whose conversation has been idle longer
// than the TTL, whose tree is clean (no uncommitted or untracked change
// outside golem's own excluded files) and whose branch is merged into the
// base or pushed to a remote. The branch itself is deleted too when it is
// merged; a pushed one stays. Worktrees with work that would be lost are
// kept and listed in the result (and by Kept until the next Cleanup).
// Cleanup never forces git: a `git worktree remove` that finds the tree
// changed meanwhile fails, and the worktree stays. A conversation whose
// worktree is removed gets a new one (on its branch, if it was kept) with
// its next message.
func (ws *Workspaces) Cleanup(ctx context.Context, now time.Time) (removed []Workspace, kept []Kept, err error) {
	removed, kept, err = ws.sweep(ctx, now, true)
	ws.mu.Lock()
	ws.kept = kept
	ws.mu.Unlock()
	return removed, kept, err
}

// Survey is Cleanup without removing anything: the idle worktrees it
// would keep for their work, for `bot doctor`. It writes nothing (git runs
// with --no-optional-locks).
func (ws *Workspaces) Survey(ctx context.Context, now time.Time) ([]Kept, error) {
	_, kept, err := ws.sweep(ctx, now, false)
	return kept, err
}

// sweep looks at every idle worktree and, with remove, removes the ones
// that hold nothing to lose.
func (ws *Workspaces) sweep(ctx context.Context, now time.Time, remove bool) (removed []Workspace, kept []Kept, err error) {
	if ws.opts.Isolation != Worktree {
		return nil, nil, nil
	}
	metas, _ := filepath.Glob(filepath.Join(ws.opts.Root, "*", "*.json"))
	var errs []error
	for _, path := range metas {
		m, err := readMeta(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := ws.repo(ctx, m.Repo)
		if err != nil {
			errs = append(errs, fmt.Errorf("worktree: cleanup %s: %w", m.Repo, err))
			continue
		}
		tree := strings.TrimSuffix(path, ".json")
		w := Workspace{Dir: filepath.Join(tree, r.prefix), Repo: m.Repo, Tree: tree, Branch: m.Branch, Base: m.Base}
		fi, err := os.Stat(tree)
		if errors.Is(err, os.ErrNotExist) { // removed by hand
			if remove {
				_ = os.Remove(path)
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		idle := now.Sub(fi.ModTime())
		if idle < ws.opts.TTL {
			continue
		}
		r.create.Lock()
		reason, merged, err := ws.removable(ctx, r, w)
		if remove && err == nil && reason == "" {
			err = ws.remove(ctx, r, w, merged, path)
		}
		r.create.Unlock()
		switch {
		case err != nil:
			errs = append(errs, err)
		case reason != "":
			kept = append(kept, Kept{Workspace: w, Conversation: m.Conversation, Idle: idle, Reason: reason})
		case remove:
			removed = append(removed, w)
			ws.log.Info("idle worktree removed", "worktree", tree, "branch", m.Branch, "branch_deleted", merged)
		}
	}
	return removed, kept, errors.Join(errs...)
}

// Kept is what the last Cleanup kept, for `bot doctor`.
func (ws *Workspaces) Kept() []Kept {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return slices.Clone(ws.kept)
}

// removable says why w must stay ("" when it may go) and whether its
// branch is merged into the base.
func (ws *Workspaces) removable(ctx context.Context, r *repo, w Workspace) (reason string, merged bool, err error) {
	t := ws.opts.GitTimeout
	status, err := git(ctx, t, w.Tree, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return "", false, fmt.Errorf("worktree: cleanup %s: %w", w.Tree, err)
	}
	if status != "" {
		return "uncommitted changes", false, nil
	}
	target, err := ws.base(ctx, r)
	if err != nil {
		return "", false, fmt.Errorf("worktree: cleanup %s: %w", w.Tree, err)
	}
	if _, err := git(ctx, t, r.top, "merge-base", "--is-ancestor", "refs/heads/"+w.Branch, target); err == nil {
		return "", true, nil
	}
	remote, err := git(ctx, t, r.top, "for-each-ref", "--count=1", "--contains", "refs/heads/"+w.Branch, "--format=%(refname)", "refs/remotes")
	if err != nil {
		return "", false, fmt.Errorf("worktree: cleanup %s: %w", w.Tree, err)
	}
	if remote == "" {
		return "commits neither merged nor pushed", false, nil
	}
	return "", false, nil
}

func (ws *Workspaces) remove(ctx context.Context, r *repo, w Workspace, merged bool, metaPath string) error {
	t := ws.opts.GitTimeout
	if _, err := git(ctx, t, r.top, "worktree", "remove", w.Tree); err != nil {
		return fmt.Errorf("worktree: remove %s: %w", w.Tree, err)
	}
	if err := os.Remove(metaPath); err != nil {
		return fmt.Errorf("worktree: remove %s: %w", metaPath, err)
	}
	if merged {
		if _, err := git(ctx, t, r.top, "branch", "-D", "--end-of-options", w.Branch); err != nil {
			return fmt.Errorf("worktree: delete branch %s: %w", w.Branch, err)
		}
	}
	return nil
}
