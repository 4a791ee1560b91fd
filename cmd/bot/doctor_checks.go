package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	"github.com/golem-chat/golem/worktree"
)

// checkStore opens the store the way serve does (it waits about a second
// for a lock), unless the file does not exist yet: doctor creates nothing.
func checkStore(cfg config.Config) []finding {
	if cfg.StoreIsEtcd() {
		return checkEtcdStore(cfg)
	}
	path, err := filepath.Abs(cfg.Path(cfg.Store))
	if err != nil {
		return []finding{{"store", fail, err.Error()}}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		dir := existingParent(filepath.Dir(path))
		if err := writable(dir); err != nil {
			return []finding{{"store", fail, fmt.Sprintf("%s does not exist and cannot be created: %v — make %s writable by the user golem runs as, or set store:", path, err, dir)}}
		}
		return []finding{{"store", pass, path + " does not exist yet; bot serve creates it"}}
	}
	st, err := store.Open(path)
	switch {
	case errors.Is(err, store.ErrLocked):
		return []finding{{"store", note, path + " is in use by a running bot (locked), as it should be while golem runs; stop it to check the file itself"},
			{"schedules", note, "not counted: the running bot holds the store (its /schedules lists them per conversation)"}}
	case errors.Is(err, store.ErrCorrupt):
		return []finding{{"store", fail, err.Error() + " — move the file aside (its sessions are lost) and start again"}}
	case errors.Is(err, store.ErrSchemaTooNew):
		return []finding{{"store", fail, err.Error() + " — run the golem that wrote it, or a newer one"}}
	case err != nil:
		return []finding{{"store", fail, err.Error() + " — make it readable and writable by the user golem runs as"}}
	}
	turns, err := st.InFlightTurns()
	sched := checkSchedules(cfg, st)
	_ = st.Close()
	if err != nil {
		return []finding{{"store", fail, err.Error()}}
	}
	text := path + " opens"
	if len(turns) > 0 {
		text += fmt.Sprintf("; %d turns were cut short by the last stop and get an interrupted notice at the next start", len(turns))
	}
	return []finding{{"store", pass, text}, sched}
}

// checkSchedules counts the scheduled prompts in st and names the next
// run.
func checkSchedules(cfg config.Config, st store.Store) finding {
	opts, err := cfg.Schedules.Options()
	if err != nil {
		return finding{"schedules", fail, err.Error()}
	}
	opts.Store = st
	o, err := schedule.New(opts).Overview(time.Now())
	if err != nil {
		return finding{"schedules", fail, err.Error()}
	}
	return finding{"schedules", pass, o.String()}
}

// checkEtcdStore opens the etcd store the way serve does; an empty prefix
// gets its schema marker, as at serve's first start.
func checkEtcdStore(cfg config.Config) []finding {
	st, err := openStore(cfg)
	switch {
	case errors.Is(err, store.ErrSchemaTooNew):
		return []finding{{"store", fail, err.Error() + " — run the golem that wrote it, or a newer one, or use another prefix"}}
	case errors.Is(err, store.ErrCorrupt):
		return []finding{{"store", fail, err.Error() + " — the prefix holds keys that are not golem's; use another prefix"}}
	case err != nil:
		return []finding{{"store", fail, err.Error()}}
	}
	turns, err := st.InFlightTurns()
	sched := checkSchedules(cfg, st)
	volume := checkSharedVolume(cfg, st)
	_ = st.Close()
	if err != nil {
		return []finding{{"store", fail, err.Error()}}
	}
	text := cfg.Store + " opens"
	if len(turns) > 0 {
		text += fmt.Sprintf("; %d turns in flight", len(turns))
	}
	return []finding{{"store", pass, text}, sched, volume}
}

// checkSharedVolume looks for every replica's marker in this replica's
// workspace (see cluster.MarkVolume): replicas must share it.
func checkSharedVolume(cfg config.Config, st store.Store) finding {
	es, ok := st.(*etcdstore.Store)
	if !ok {
		return finding{"shared workspace", fail, "the store is not etcd"}
	}
	workspace, err := filepath.Abs(cfg.Path(cfg.Workspace))
	if err != nil {
		return finding{"shared workspace", fail, err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := cluster.CheckVolume(ctx, es.Client(), es.Prefix(), workspace)
	switch {
	case err != nil:
		return finding{"shared workspace", fail, "reading the replicas' markers: " + err.Error()}
	case len(c.Problems) > 0:
		return finding{"shared workspace", fail, strings.Join(c.Problems, "; ") +
			" — mount the workspace from one volume at the same path on every replica (see Several replicas in the README)"}
	case len(c.Seen) == 0:
		return finding{"shared workspace", note, "no replica has started on this store yet; start them, then run bot doctor again"}
	}
	return finding{"shared workspace", pass, fmt.Sprintf("the markers of %s are in %s", strings.Join(c.Seen, ", "), workspace)}
}

// existingParent is dir or its nearest ancestor that exists.
func existingParent(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// writable reports whether the user may create files in dir.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".golem-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// checkWorkspaces checks the workspace and every channel's workdir: they
// exist (the workspace may be missing: serve creates it) and, with
// isolation: worktree, are git repositories with a commit.
func checkWorkspaces(ctx context.Context, cfg config.Config, probe time.Duration) []finding {
	workspace, err := filepath.Abs(cfg.Path(cfg.Workspace))
	if err != nil {
		return []finding{{"workspace", fail, err.Error()}}
	}
	folders := []string{workspace}
	channels, err := cfg.Overrides()
	if err != nil {
		return []finding{{"workspace", fail, err.Error()}}
	}
	for _, o := range channels {
		if o.Workdir != "" && !slices.Contains(folders, o.Workdir) {
			folders = append(folders, o.Workdir)
		}
	}
	slices.Sort(folders[1:])
	ws, err := worktree.New(worktree.Options{Isolation: cfg.Isolation, Root: os.TempDir(), BaseBranch: cfg.BaseBranch, GitTimeout: probe})
	if err != nil {
		return []finding{{"workspace", fail, err.Error()}}
	}
	var out []finding
	for i, dir := range folders {
		name := "workspace"
		if i > 0 {
			name = "workdir"
		}
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist) && i == 0 && cfg.Isolation != worktree.Worktree:
			out = append(out, finding{name, pass, dir + " does not exist yet; bot serve creates it"})
			continue
		case err != nil:
			out = append(out, finding{name, fail, fmt.Sprintf("%v — create it, or fix workspace:/channels.*.workdir", err)})
			continue
		case !fi.IsDir():
			out = append(out, finding{name, fail, dir + " is not a folder — point workspace: at a folder"})
			continue
		}
		if cfg.Isolation != worktree.Worktree {
			out = append(out, finding{name, pass, dir + " (isolation: shared)"})
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, probe)
		err = ws.Check(cctx, dir)
		cancel()
		if err != nil {
			out = append(out, finding{name, fail, err.Error() + " — `git init` and commit there, or set isolation: shared"})
			continue
		}
		out = append(out, finding{name, pass, dir + " is a git repository (isolation: worktree)"})
	}
	if cfg.Isolation == worktree.Worktree {
		out = append(out, checkKeptWorktrees(ctx, cfg, probe))
	}
	return out
}

// checkKeptWorktrees lists the idle worktrees that bot serve's cleanup
// keeps because they hold uncommitted or unpushed work (worktree.Survey
// removes and writes nothing).
func checkKeptWorktrees(ctx context.Context, cfg config.Config, probe time.Duration) finding {
	root, err := worktreeRoot(cfg)
	if err != nil {
		return finding{"worktrees", fail, err.Error()}
	}
	ws, err := worktree.New(worktree.Options{Isolation: worktree.Worktree, Root: root, BaseBranch: cfg.BaseBranch,
		TTL: cfg.WorktreeTTL, GitTimeout: probe, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return finding{"worktrees", fail, err.Error()}
	}
	kept, err := ws.Survey(ctx, time.Now())
	if err != nil {
		return finding{"worktrees", fail, "cannot look at the worktrees in " + root + ": " + err.Error()}
	}
	if len(kept) == 0 {
		return finding{"worktrees", pass, "no worktree idle past worktree_ttl holds unsaved work (" + root + ")"}
	}
	lines := make([]string, len(kept))
	for i, k := range kept {
		lines[i] = fmt.Sprintf("%s (%s, idle %s: %s)", k.Tree, k.Branch, k.Idle.Round(time.Hour), k.Reason)
	}
	return finding{"worktrees", note, fmt.Sprintf("%d idle worktrees are kept for their work — commit and push, or remove them by hand: %s",
		len(kept), strings.Join(lines, "; "))}
}

// engineToCheck is one engine of the registry and whether the
// configuration uses it (engine: or a channel's engine).
type engineToCheck struct {
	spec engine.Spec
	set  engine.Settings
	used bool
}

func enginesToCheck(cfg config.Config) []engineToCheck {
	used := map[string]bool{cfg.Engine: true}
	for _, ch := range cfg.Channels {
		if ch.Engine != "" {
			used[ch.Engine] = true
		}
	}
	var out []engineToCheck
	for _, s := range engine.Engines() {
		out = append(out, engineToCheck{spec: s, set: cfg.Engines[s.Name], used: used[s.Name]})
	}
	return out
}

// checkEngine finds an engine's CLI, asks its --version and looks for its
// key or login. An engine that nothing configured uses is only noted when
// it cannot run: /engine NAME would then say so in the chat.
func checkEngine(ctx context.Context, e engineToCheck, probe time.Duration) finding {
	name := "engine " + e.spec.Name
	ctx, cancel := context.WithTimeout(ctx, probe)
	defer cancel()
	h, err := engine.Checkup(ctx, e.spec, e.set)
	if err == nil {
		return finding{name, pass, fmt.Sprintf("%s: %s; %s", h.Path, h.Version, h.Credentials)}
	}
	v := fail
	if !e.used {
		v = note
	}
	switch {
	case errors.Is(err, engine.ErrNotInstalled) && !e.used:
		return finding{name, v, "not installed (no conversation uses it; /engine " + e.spec.Name + " would need it)"}
	case errors.Is(err, engine.ErrNoVersion):
		return finding{name, v, err.Error() + " — check that engines." + e.spec.Name + ".command is the CLI and that it runs as the user golem runs as"}
	case errors.Is(err, engine.ErrNoCredentials):
		return finding{name, v, h.Version + "; " + err.Error()}
	default: // ErrNotInstalled says how to install it
		return finding{name, v, err.Error()}
	}
}

// checkSandbox says whether golem's sandbox works here as sandbox: asks:
// bubblewrap found and able to make a sandbox. With mode on a missing
// piece fails (golem would refuse to start); with auto it is a note, since
// agents then run unsandboxed.
func checkSandbox(ctx context.Context, cfg config.Config) finding {
	f := finding{name: "sandbox"}
	channels := map[string]sandbox.Config{}
	for k, ch := range cfg.Channels {
		channels[k] = ch.Sandbox
	}
	var st sandbox.Status
	sb, err := sandbox.New(ctx, cfg.Sandbox, sandbox.Options{Channels: channels, Logger: slog.New(slog.DiscardHandler),
		Probe: func(ctx context.Context) sandbox.Status { st = sandbox.Probe(ctx); return st }})
	switch {
	case err != nil:
		f.v, f.text = fail, err.Error()
	case sb.Off() != "":
		f.v, f.text = note, "agents run WITHOUT a sandbox: "+sb.Off()
	default:
		f.v = pass
		f.text = "bubblewrap works (" + st.Bwrap + "); network: " + string(cfg.Sandbox.Network)
		if cfg.Sandbox.Network != sandbox.None {
			f.text += " through golem's proxy"
		}
	}
	return f
}
