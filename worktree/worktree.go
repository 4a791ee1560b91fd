// Package worktree gives each conversation its working directory: the
// shared workspace folder (isolation: shared, golem's first behaviour), or
// a git worktree of its own on a branch golem/<name> (isolation: worktree),
// created on the conversation's first message, found again after a
// restart, and removed when it has been idle long enough and nothing would
// be lost. Core asks it for a folder and hands the engines a plain Workdir.
//
// The mapping from conversation to worktree is derived, not stored: the
// worktree of conversation K in repository R is <Root>/<repo id of
// R>/<Name(K)>, on branch Branch(K). A small JSON file beside each worktree
// records the commit its branch started from and the conversation key, for
// /diff and for cleanup. The main checkout's files are never written; in
// its .git folder golem adds worktrees, branches golem/*, and a few lines
// to info/exclude (outbox/, inbox/ and the skill links golem makes, so
// they never show as changes).
//
// All git work goes through the git CLI, each call bounded in time.
// Creating worktrees is serialized per repository (git's own locks would
// make a concurrent `git worktree add` fail); finding an existing one needs
// no git call at all.
package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Isolation is how conversations share the workspace.
type Isolation string

const (
	// Shared: every conversation works in the configured folder itself.
	Shared Isolation = "shared"
	// Worktree: each conversation works in a git worktree of its own.
	Worktree Isolation = "worktree"
)

// ParseIsolation reads the isolation config value; "" is Shared.
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(s) {
	case "", Shared:
		return Shared, nil
	case Worktree:
		return Worktree, nil
	}
	return "", fmt.Errorf("isolation: %q is not shared or worktree", s)
}

// Options configure Workspaces.
type Options struct {
	Isolation Isolation // default Shared
	// Root is the folder that holds the worktrees, one subfolder per
	// repository. Required with Worktree; it must not be inside a
	// repository golem makes worktrees of.
	Root string
	// BaseBranch is where new branches start; "" is the repository's
	// current HEAD.
	BaseBranch string
	// TTL is how long a worktree's conversation may be idle before Cleanup
	// removes it (if nothing would be lost); default 336h.
	TTL time.Duration
	// GitTimeout bounds each git call; default 1m.
	GitTimeout time.Duration
	Logger     *slog.Logger
}

// Workspaces hands out conversations' working directories. Its methods
// may be called concurrently.
type Workspaces struct {
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	repos map[string]*repo // by the configured folder, cleaned
	kept  []Kept           // what the last Cleanup kept
}

// repo is what Workspaces knows of one configured folder's repository.
type repo struct {
	create *sync.Mutex // serializes git worktree add in this repository
	top    string      // the repository's top level (the main checkout)
	prefix string      // the configured folder relative to top, "" or "sub/dir/"
	root   string      // where its worktrees live
}

// Workspace is where one conversation's agent works.
type Workspace struct {
	Dir    string // the agent's working directory
	Repo   string // the configured folder it is made from
	Tree   string // the worktree's top level; "" when shared
	Branch string // "" when shared
	Base   string // the commit the branch started from; "" when shared
}

// Isolated reports whether w is a worktree of its own.
func (w Workspace) Isolated() bool { return w.Branch != "" }

// meta is the JSON file kept beside a worktree.
type meta struct {
	Conversation string    `json:"conversation"`
	Repo         string    `json:"repo"`
	Branch       string    `json:"branch"`
	Base         string    `json:"base"`
	Created      time.Time `json:"created"`
}

// New returns Workspaces for opts.
func New(opts Options) (*Workspaces, error) {
	if opts.Isolation == "" {
		opts.Isolation = Shared
	}
	if opts.Isolation == Worktree && opts.Root == "" {
		return nil, errors.New("worktree: worktrees need a root folder")
	}
	if opts.TTL <= 0 {
		opts.TTL = 336 * time.Hour
	}
	if opts.GitTimeout <= 0 {
		opts.GitTimeout = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Workspaces{opts: opts, log: opts.Logger, repos: map[string]*repo{}}, nil
}

// Isolation is the configured isolation.
func (ws *Workspaces) Isolation() Isolation { return ws.opts.Isolation }

// Check verifies at start that folder can serve conversations: with
// Worktree it must be inside a git repository with at least one commit
// (and BaseBranch, when set, must name a commit there). The error names
// the isolation key, as a configuration error should.
func (ws *Workspaces) Check(ctx context.Context, folder string) error {
	if ws.opts.Isolation != Worktree {
		return nil
	}
	r, err := ws.repo(ctx, folder)
	if err != nil {
		return fmt.Errorf("isolation: worktree needs %s to be a git repository: %w", folder, err)
	}
	if _, err := ws.base(ctx, r); err != nil {
		return fmt.Errorf("isolation: worktree in %s: %w", folder, err)
	}
	return nil
}

// Open returns the working directory of conversation in folder (the
// configured workspace or a channel's workdir), creating its worktree on
// first use. Later calls, in this run or after a restart, find the same
// worktree without running git. Open also marks the worktree used now,
// which Cleanup's idle time counts from.
func (ws *Workspaces) Open(ctx context.Context, folder, conversation string) (Workspace, error) {
	if ws.opts.Isolation != Worktree {
		return Workspace{Dir: folder, Repo: folder}, nil
	}
	r, err := ws.repo(ctx, folder)
	if err != nil {
		return Workspace{}, fmt.Errorf("worktree: %s: %w", folder, err)
	}
	w, found := ws.find(r, folder, conversation)
	if !found {
		r.create.Lock()
		w, found = ws.find(r, folder, conversation)
		if !found {
			w, err = ws.create(ctx, r, folder, conversation)
		}
		r.create.Unlock()
		if err != nil {
			return Workspace{}, err
		}
	}
	now := time.Now()
	if err := os.Chtimes(w.Tree, now, now); err != nil {
		ws.log.Warn("mark worktree used", "worktree", w.Tree, "err", err)
	}
	return w, nil
}

// Find returns conversation's workspace in folder without creating it:
// false when it has none yet (a shared workspace is always found).
func (ws *Workspaces) Find(ctx context.Context, folder, conversation string) (Workspace, bool, error) {
	if ws.opts.Isolation != Worktree {
		return Workspace{Dir: folder, Repo: folder}, true, nil
	}
	r, err := ws.repo(ctx, folder)
	if err != nil {
		return Workspace{}, false, fmt.Errorf("worktree: %s: %w", folder, err)
	}
	w, ok := ws.find(r, folder, conversation)
	return w, ok, nil
}

// find looks for an existing worktree: its folder with git's .git file
// and golem's meta file beside it.
func (ws *Workspaces) find(r *repo, folder, conversation string) (Workspace, bool) {
	name := Name(conversation)
	tree := filepath.Join(r.root, name)
	if _, err := os.Lstat(filepath.Join(tree, ".git")); err != nil {
		return Workspace{}, false
	}
	m, err := readMeta(filepath.Join(r.root, name+".json"))
	if err != nil {
		return Workspace{}, false
	}
	return Workspace{Dir: filepath.Join(tree, r.prefix), Repo: folder, Tree: tree, Branch: m.Branch, Base: m.Base}, true
}

// create adds the worktree; the caller holds r.create.
func (ws *Workspaces) create(ctx context.Context, r *repo, folder, conversation string) (Workspace, error) {
	name := Name(conversation)
	branch := Branch(conversation)
	tree := filepath.Join(r.root, name)
	metaPath := filepath.Join(r.root, name+".json")
	if err := os.MkdirAll(r.root, 0o755); err != nil {
		return Workspace{}, fmt.Errorf("worktree: create %s: %w", r.root, err)
	}
	if err := ws.exclude(ctx, r); err != nil {
		return Workspace{}, err
	}
	t := ws.opts.GitTimeout
	// A folder left by a crash between `worktree add` and the meta file,
	// or a worktree removed by hand: let git forget it first.
	if _, err := git(ctx, t, r.top, "worktree", "prune"); err != nil {
		return Workspace{}, fmt.Errorf("worktree: %w", err)
	}
	var base string
	if _, err := git(ctx, t, r.top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		// The branch outlived its worktree (cleanup keeps pushed ones):
		// check it out again, and find where it started.
		if m, err := readMeta(metaPath); err == nil && m.Base != "" {
			base = m.Base
		} else if b, err := ws.base(ctx, r); err == nil {
			base, _ = git(ctx, t, r.top, "merge-base", b, "refs/heads/"+branch)
		}
		if _, err := git(ctx, t, r.top, "worktree", "add", "--quiet", tree, branch); err != nil {
			return Workspace{}, fmt.Errorf("worktree: add worktree for %s: %w", branch, err)
		}
	} else {
		if base, err = ws.base(ctx, r); err != nil {
			return Workspace{}, fmt.Errorf("worktree: %w", err)
		}
		if _, err := git(ctx, t, r.top, "worktree", "add", "--quiet", "--no-track", "-b", branch, tree, base); err != nil {
			return Workspace{}, fmt.Errorf("worktree: add worktree %s: %w", branch, err)
		}
	}
	m := meta{Conversation: conversation, Repo: folder, Branch: branch, Base: base, Created: time.Now().UTC()}
	if err := writeMeta(metaPath, m); err != nil {
		return Workspace{}, err
	}
	ws.log.Info("worktree created", "worktree", tree, "branch", branch)
	return Workspace{Dir: filepath.Join(tree, r.prefix), Repo: folder, Tree: tree, Branch: branch, Base: base}, nil
}

// base is the commit new branches start from: BaseBranch, or HEAD.
func (ws *Workspaces) base(ctx context.Context, r *repo) (string, error) {
	rev := "HEAD"
	if ws.opts.BaseBranch != "" {
		rev = ws.opts.BaseBranch
	}
	sha, err := git(ctx, ws.opts.GitTimeout, r.top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		if ws.opts.BaseBranch != "" {
			return "", fmt.Errorf("base_branch %q is not a commit in %s", ws.opts.BaseBranch, r.top)
		}
		return "", fmt.Errorf("%s has no commit yet to start branches from", r.top)
	}
	return sha, nil
}

// repo returns what is known of folder's repository, asking git once per
// folder and run.
func (ws *Workspaces) repo(ctx context.Context, folder string) (*repo, error) {
	folder = filepath.Clean(folder)
	ws.mu.Lock()
	r := ws.repos[folder]
	ws.mu.Unlock()
	if r != nil {
		return r, nil
	}
	out, err := git(ctx, ws.opts.GitTimeout, folder, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return nil, err
	}
	top, prefix, _ := strings.Cut(out, "\n")
	if top == "" {
		return nil, ErrNotRepository // a bare repository, or inside .git
	}
	id := slug(filepath.Base(top)) + "-" + shortHash(top)
	r = &repo{create: new(sync.Mutex), top: top, prefix: filepath.FromSlash(prefix), root: filepath.Join(ws.opts.Root, id)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if had := ws.repos[folder]; had != nil {
		return had, nil
	}
	// Two folders of one repository share its worktrees' lock.
	for _, o := range ws.repos {
		if o.top == r.top {
			ws.repos[folder] = &repo{create: o.create, top: o.top, prefix: r.prefix, root: o.root}
			return ws.repos[folder], nil
		}
	}
	ws.repos[folder] = r
	return r, nil
}

// excludeLines are added to the repository's info/exclude (shared by its
// worktrees): what golem puts in a working directory is never a change.
var excludeLines = []string{"/outbox/", "/inbox/", "/.claude/skills/", "/.cursor/skills/", "/.agents/skills/", "/CLAUDE.md", "/AGENTS.md"}

const excludeHeader = "# golem: its worktrees' outbox, inbox and skill links"

// exclude makes sure info/exclude has excludeLines.
func (ws *Workspaces) exclude(ctx context.Context, r *repo) error {
	common, err := git(ctx, ws.opts.GitTimeout, r.top, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	path := filepath.Join(common, "info", "exclude")
	had, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("worktree: read %s: %w", path, err)
	}
	if strings.Contains(string(had), excludeHeader) {
		return nil
	}
	text := string(had)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += excludeHeader + "\n" + strings.Join(excludeLines, "\n") + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("worktree: write %s: %w", path, err)
	}
	return nil
}

func readMeta(path string) (meta, error) {
	var m meta
	raw, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("worktree: read %s: %w", path, err)
	}
	return m, nil
}

// writeMeta writes atomically, so a crash never leaves half a file.
func writeMeta(path string, m meta) error {
	raw, _ := json.MarshalIndent(m, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("worktree: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("worktree: write %s: %w", path, err)
	}
	return nil
}
