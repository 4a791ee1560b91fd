package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/internal/retry"
	"github.com/golem-chat/golem/metrics"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// leaderRoles are the jobs that one replica at a time does
// (cluster.Replica.Lead), as golem_leader{role} names them.
var leaderRoles = []string{"telegram", "discord", "schedules", "worktrees"}

// shutdownGrace is how long running turns may finish after SIGINT/SIGTERM
// before they are stopped.
const shutdownGrace = 30 * time.Second

// app is golem wired from its configuration: store, engines, dispatcher.
type app struct {
	cfg       config.Config
	log       *slog.Logger
	store     store.Store
	d         *core.Dispatcher
	workspace string
	workdirs  *worktree.Workspaces
	sandbox   *sandbox.Sandbox  // the agents'; a removed worktree's CLI state goes with it
	metrics   *metrics.Registry // served at GET /metrics by the HTTP API
	member    membership        // this golem among the replicas sharing its store
	schedules *schedule.Book    // its loop runs on the replica leading "schedules"
}

// configFlag adds --config to fs; the default ./bot.yaml may be missing
// (the embedded defaults run), a named file must exist.
func configFlag(fs *flag.FlagSet) func() (config.Config, error) {
	path := fs.String("config", "bot.yaml", "the configuration `file`")
	return func() (config.Config, error) {
		named := false
		fs.Visit(func(f *flag.Flag) { named = named || f.Name == "config" })
		return config.Load(*path, !named)
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// newApp wires golem from cfg. fires picks the schedules its loop fires;
// nil: all but the terminal's (see notTerminal).
func newApp(cfg config.Config, log *slog.Logger, fires func(store.Schedule) bool) (*app, error) {
	workspace, err := filepath.Abs(cfg.Path(cfg.Workspace))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	skills := ""
	if cfg.Skills != "" {
		if skills, err = filepath.Abs(cfg.Path(cfg.Skills)); err != nil {
			return nil, err
		}
		if _, err := os.Stat(skills); err != nil {
			log.Warn("skills folder not found; no skills are injected", "skills", skills)
			skills = ""
		}
	}
	engines := map[string]engine.Engine{}
	models := map[string]string{}
	for _, name := range engine.Names() {
		set := cfg.Engines[name]
		base := set.Base()
		base.SkillsDir, base.Logger = skills, log
		base.Withhold = cfg.Withheld() // what golem's configuration read never reaches an agent
		eng := set.Engine()
		if _, err := eng.Lookup(); err != nil {
			level := slog.LevelInfo
			if name == cfg.Engine {
				level = slog.LevelWarn
			}
			log.Log(context.Background(), level, "engine CLI not found; chats using it get the install hint", "engine", name, "err", err)
		}
		engines[name] = eng
		models[name] = base.Model
	}
	channels, err := cfg.Overrides()
	if err != nil {
		return nil, err
	}
	workdirs, err := newWorkdirs(cfg, log, workspace, channels)
	if err != nil {
		return nil, err
	}
	sb, err := newSandbox(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	member, err := joinCluster(cfg, st, workspace, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	var shared core.Cluster // nil when alone (not a nil *cluster.Conversations)
	if member.convs != nil {
		shared = member.convs
	}
	meter := metrics.New()
	if member.etcd != nil {
		meter = metrics.NewFor(member.replica.Name())
		meter.WatchReplica(member.convs.Owned, member.replica.Leading, leaderRoles)
	}
	queueDepth := cfg.QueueDepth
	if queueDepth == 0 {
		queueDepth = -1 // queue_depth: 0 means none may wait; core's 0 is its default
	}
	sopts, err := cfg.Schedules.Options()
	if err != nil {
		member.close()
		st.Close()
		return nil, fmt.Errorf("schedules: %w", err)
	}
	if fires == nil {
		fires = notTerminal
	}
	sopts.Store, sopts.Logger, sopts.Counted, sopts.Fires = st, log, meter.ScheduleRun, fires
	book := schedule.New(sopts)
	budgets := core.Budgets{DailyUSDPerUser: cfg.Limits.DailyUSDPerUser, MonthlyUSDPerConversation: cfg.Limits.MonthlyUSDPerConversation}
	if cfg.Limits.ExemptApprovers { // permissions.approvers are never refused
		budgets.Exempt = cfg.Permissions.Approvers
	}
	d, err := core.NewDispatcher(core.Options{
		Engines:       engines,
		DefaultEngine: cfg.Engine,
		Models:        models,
		Channels:      channels,
		Store:         st,
		Workspace:     workspace,
		Workdirs:      workdirs,
		Sandbox:       sb,
		PRCommand:     cfg.PRCommand,
		Scope:         cfg.SessionScope,
		Allow:         cfg.Access.Allow,
		// The terminal is the operator's own; the HTTP API listens on
		// loopback or behind its token (config validation insists).
		Trusted: []string{"console", "http"},
		Timeout: cfg.Timeout,
		Permissions: core.Permissions{Mode: engine.Mode(cfg.Permissions.Mode),
			Approvers: cfg.Permissions.Approvers, Timeout: cfg.Permissions.Timeout},
		MaxConcurrent: cfg.MaxConcurrent,
		QueueDepth:    queueDepth,
		Busy:          cfg.Busy,
		Logger:        log,
		Meter:         meter,
		Footer:        cfg.Footer,
		Context:       core.ContextLimits{MaxMessages: cfg.Context.MaxMessages, MaxChars: cfg.Context.MaxChars},
		Budgets:       budgets,
		Cluster:       shared,
		Schedules:     book,
	})
	if err != nil {
		member.close()
		st.Close()
		return nil, err
	}
	meter.Watch(d)
	book.Bind(d)
	if err := book.Declare(cfg.Schedules.Jobs); err != nil {
		_ = d.Close(context.Background())
		member.close()
		st.Close()
		return nil, err
	}
	retry.Observe(meter) // every platform call of this process
	for _, a := range cfg.Access.Allow {
		if a == "*" {
			log.Warn(`access.allow has "*": ANYONE who can message the bot runs commands on this machine`)
		}
	}
	return &app{cfg: cfg, log: log, store: st, d: d, workspace: workspace, workdirs: workdirs, sandbox: sb,
		metrics: meter, member: member, schedules: book}, nil
}

// newWorkdirs makes the conversations' working directories as isolation
// says. With worktrees, the workspace and every channel's workdir must be
// git repositories (checked now, so that a mistake stops the start rather
// than the first message); the worktrees live beside the store.
func newWorkdirs(cfg config.Config, log *slog.Logger, workspace string, channels map[string]core.Override) (*worktree.Workspaces, error) {
	root, err := worktreeRoot(cfg)
	if err != nil {
		return nil, err
	}
	ws, err := worktree.New(worktree.Options{
		Isolation: cfg.Isolation, Root: root, BaseBranch: cfg.BaseBranch, TTL: cfg.WorktreeTTL, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("isolation: %w", err)
	}
	folders := []string{workspace}
	for _, o := range channels {
		if o.Workdir != "" {
			folders = append(folders, o.Workdir)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range folders {
		if err := ws.Check(ctx, f); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// newSandbox probes bubblewrap once and returns golem's sandbox: what no
// agent sees is the store's folder (the worktrees and each working
// directory's own CLI state come back one by one), the configuration file
// and the files it names secrets in.
func newSandbox(cfg config.Config, log *slog.Logger) (*sandbox.Sandbox, error) {
	channels := map[string]sandbox.Config{}
	for k, ch := range cfg.Channels {
		channels[k] = ch.Sandbox
	}
	state, err := dataPath(cfg, "agent-state")
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(context.Background(), cfg.Sandbox, sandbox.Options{Hide: sandboxHidden(cfg), StateDir: state,
		Channels: channels, Logger: log})
	if err == nil && sb.Off() == "" {
		log.Info("sandbox: agents run in bubblewrap", "bwrap", sb.Status().Bwrap, "network", cfg.Sandbox.Network)
	}
	return sb, err
}

// sandboxHidden are the paths of golem's own that agents never see.
func sandboxHidden(cfg config.Config) []string {
	hide := []string{cfg.DataDir(), cfg.File()}
	if !cfg.StoreIsEtcd() {
		hide = append(hide, cfg.Path(cfg.Store))
	}
	for _, f := range []string{cfg.StoreTLS.CA, cfg.StoreTLS.Cert, cfg.StoreTLS.Key} {
		if f != "" {
			hide = append(hide, cfg.Path(f))
		}
	}
	return hide
}

// worktreeRoot is where the conversations' worktrees live: beside the
// store (with etcd, in ./data).
func worktreeRoot(cfg config.Config) (string, error) { return dataPath(cfg, "worktrees") }

// dataPath is the absolute path of name in golem's data folder, beside
// the store (with etcd, ./data; see config.DataDir), which the agents'
// sandbox hides.
func dataPath(cfg config.Config, name string) (string, error) {
	return filepath.Abs(filepath.Join(cfg.DataDir(), name))
}

// cleanWorktrees removes idle worktrees that hold nothing to lose, at once
// and then every hour until ctx ends; the ones kept are logged.
func (a *app) cleanWorktrees(ctx context.Context) {
	if a.workdirs.Isolation() != worktree.Worktree {
		return
	}
	a.member.replica.Lead(ctx, "worktrees", a.cleanWorktreesLeading) // once, cluster-wide
}

func (a *app) cleanWorktreesLeading(ctx context.Context) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		removed, kept, err := a.workdirs.Cleanup(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			a.log.Warn("worktree cleanup", "err", err)
		}
		if len(removed) > 0 || len(kept) > 0 {
			a.log.Info("worktree cleanup", "removed", len(removed), "kept_with_work", len(kept))
		}
		for _, w := range removed { // and the CLI state each kept of its own
			if err := a.sandbox.Forget(w.Dir); err != nil {
				a.log.Warn("worktree cleanup: the agent CLI's state of a removed worktree", "dir", w.Dir, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// notTerminal picks the schedules `bot serve` fires: all but those set in
// `bot run`'s terminal, which wait for it (see runChat).
func notTerminal(sc store.Schedule) bool { return sc.Platform != "console" }

// runSchedules fires the scheduled prompts while this replica leads
// "schedules" (alone: always), until ctx ends.
func (a *app) runSchedules(ctx context.Context) {
	a.member.replica.Lead(ctx, "schedules", a.schedules.Run) // once, cluster-wide
}

// inbox is where adapters save attachments: inside the workspace, so the
// agent can read them.
func (a *app) inbox() core.Inbox {
	return core.Inbox{Dir: filepath.Join(a.workspace, "inbox"), MaxBytes: a.cfg.MaxUpload}
}

// close lets running turns finish (up to shutdownGrace, or until a second
// signal), then stops them, and closes the store.
func (a *app) close() error {
	ctx, cancel := context.WithTimeout(hurry, shutdownGrace)
	defer cancel()
	err := a.d.Close(ctx)
	return errors.Join(err, a.member.close(), a.store.Close())
}
