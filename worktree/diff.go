package worktree

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Changes are a conversation's changes since its branch started.
type Changes struct {
	Patch   string // a unified diff; "" when nothing changed
	Summary string // git's one-line count: "3 files changed, 10 insertions(+), 2 deletions(-)"
}

// Diff returns w's changes since its branch started: its commits, its
// uncommitted changes and its new files (those git does not ignore), as one
// unified diff against w.Base. It does not change w: new files are added to
// a copy of the worktree's index, never to the index itself.
func (ws *Workspaces) Diff(ctx context.Context, w Workspace) (Changes, error) {
	if !w.Isolated() {
		return Changes{}, fmt.Errorf("worktree: diff: %s is not a worktree", w.Dir)
	}
	t := ws.opts.GitTimeout
	indexPath, err := git(ctx, t, w.Tree, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return Changes{}, fmt.Errorf("worktree: diff: %w", err)
	}
	tmp, err := os.CreateTemp("", "golem-index-*")
	if err != nil {
		return Changes{}, fmt.Errorf("worktree: diff: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := copyInto(tmp, indexPath); err != nil {
		return Changes{}, fmt.Errorf("worktree: diff: copy the index: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := gitEnv(ctx, t, w.Tree, env, "add", "--all", "--", "."); err != nil {
		return Changes{}, fmt.Errorf("worktree: diff: %w", err)
	}
	base := w.Base
	if base == "" {
		base = "HEAD"
	}
	args := []string{"diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames", "--end-of-options", base}
	patch, err := gitEnv(ctx, t, w.Tree, env, args...)
	if err != nil {
		return Changes{}, fmt.Errorf("worktree: diff: %w", err)
	}
	summary, err := gitEnv(ctx, t, w.Tree, env, "diff", "--cached", "--shortstat", "--end-of-options", base)
	if err != nil {
		return Changes{}, fmt.Errorf("worktree: diff: %w", err)
	}
	return Changes{Patch: patch, Summary: strings.TrimSpace(summary)}, nil
}

// copyInto copies the file at path into f and closes f. A worktree
// without an index yet (nothing staged ever) copies nothing. The index is
// in the worktree's git folder, which the agent writes: only a regular
// file is copied, never what a symlink there leads to, and a FIFO does
// not block (found by review: a FIFO hung /diff; a symlink to /dev/zero
// filled the host's temporary folder).
func copyInto(f *os.File, path string) error {
	defer f.Close()
	src, err := os.OpenFile(filepath.Clean(path), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if os.IsNotExist(err) {
		return os.Remove(f.Name())
	}
	if err != nil {
		return err
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file", path)
	}
	_, err = io.Copy(f, src)
	return err
}
