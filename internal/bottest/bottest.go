// Package bottest wires golem for end-to-end tests the way `bot serve`
// does: a bbolt store, the core dispatcher running the fake agent CLI
// (engine/enginetest) as Claude Code, and the sources under test (a
// platform adapter against its fake server, the HTTP API, the terminal),
// stopped at the end of the test in the bot's own order: sources stop
// taking messages, running turns finish, the store closes.
//
// Every adapter's end-to-end tests use it, so that "the bot" means the same
// thing in each of them:
//
//	b := bottest.New(t, bottest.Options{Allow: []string{"slack:U1"}})
//	a, _ := slack.New(slack.Options{..., Logger: b.Log})
//	b.Start(a)
//	... drive the platform's fake, read what it shows ...
//	inv := b.Invocations() // how the agent was run
//
// A restart test calls Stop and then New again with the same Options.DB.
package bottest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/store"
)

// closeGrace is how long Stop lets running turns finish before stopping
// them, as `bot serve` does on SIGTERM (shorter: tests do not wait 30 s).
const closeGrace = 10 * time.Second

// Options shape the bot; the zero value is a bot that allows nobody, with
// a fresh store and workspace.
type Options struct {
	// DB is the store file; "" is a fresh one. Pass the same path to a
	// second New to test a restart.
	DB string
	// Workspace is the agent's working directory; "" is a fresh one.
	Workspace string
	Allow     []string   // core.Options.Allow
	Trusted   []string   // core.Options.Trusted
	Scope     core.Scope // core.Options.Scope
	// MaxConcurrent and Timeout are the dispatcher's (its defaults when 0).
	MaxConcurrent int
	Timeout       time.Duration
	// AgentLog is the fake agent's invocation log; "" is a fresh one. Pass
	// the same path to a second New to read the runs of both.
	AgentLog string
	// AgentEnv is added to the fake agent's environment.
	AgentEnv map[string]string
	// Tune, when set, has the last say on the dispatcher's options.
	Tune func(*core.Options)
}

// Bot is golem wired for one test.
type Bot struct {
	T          testing.TB
	Store      store.Store
	Dispatcher *core.Dispatcher
	Workspace  string
	// AgentLog is the fake agent's FAKE_AGENT_LOG: one line per invocation.
	AgentLog string
	// Log is the logger the bot uses; hand it to the sources under test.
	// Quiet unless GOLEM_TEST_LOG is set (then debug, on stderr).
	Log *slog.Logger

	sources []started
	stopped bool
}

type started struct {
	name   string
	cancel context.CancelFunc
	done   chan error
}

// New opens the store and starts the dispatcher; Stop (also run at the
// test's cleanup) undoes it.
func New(t testing.TB, opts Options) *Bot {
	t.Helper()
	if opts.DB == "" {
		opts.DB = filepath.Join(t.TempDir(), "golem.db")
	}
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	if opts.AgentLog == "" {
		opts.AgentLog = filepath.Join(t.TempDir(), "agent.log")
	}
	b := &Bot{T: t, Workspace: opts.Workspace, AgentLog: opts.AgentLog, Log: Logger()}
	env := map[string]string{"FAKE_AGENT_LOG": b.AgentLog}
	for k, v := range opts.AgentEnv {
		env[k] = v
	}
	st, err := store.Open(opts.DB)
	if err != nil {
		t.Fatal(err)
	}
	b.Store = st
	eng := engine.NewClaudeCode(engine.Config{Command: enginetest.Build(t), Env: env, Logger: b.Log})
	copts := core.Options{
		Engines:       map[string]engine.Engine{"claude-code": eng},
		DefaultEngine: "claude-code",
		Store:         st,
		Workspace:     opts.Workspace,
		Scope:         opts.Scope,
		Allow:         opts.Allow,
		Trusted:       opts.Trusted,
		MaxConcurrent: opts.MaxConcurrent,
		Timeout:       opts.Timeout,
		Logger:        b.Log,
	}
	if opts.Tune != nil {
		opts.Tune(&copts)
	}
	d, err := core.NewDispatcher(copts)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	b.Dispatcher = d
	t.Cleanup(b.Stop)
	return b
}

// Start registers src with the dispatcher and runs its Start until Stop.
// It returns at once; the test waits for the source to be connected the
// way its fake tells.
func (b *Bot) Start(src core.Source) {
	b.Dispatcher.Register(src)
	ctx, cancel := context.WithCancel(context.Background())
	s := started{name: src.Platform(), cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- src.Start(ctx, b.Dispatcher) }()
	b.sources = append(b.sources, s)
}

// Stop stops the bot as `bot serve` does: the sources stop taking
// messages, running turns get closeGrace to finish (their answers are
// still delivered), each source's Start must return nil, and the store is
// closed. Calling it again does nothing.
func (b *Bot) Stop() {
	if b.stopped {
		return
	}
	b.stopped = true
	for _, s := range b.sources {
		s.cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if err := b.Dispatcher.Close(ctx); err != nil {
		b.T.Errorf("dispatcher close: %v", err)
	}
	for _, s := range b.sources {
		select {
		case err := <-s.done:
			if err != nil {
				b.T.Errorf("%s: Start: %v", s.name, err)
			}
		case <-time.After(closeGrace):
			b.T.Errorf("%s: Start did not return after its context was cancelled", s.name)
		}
	}
	if err := b.Store.Close(); err != nil {
		b.T.Errorf("store close: %v", err)
	}
}

// Invocations returns how the fake agent was run, in order.
func (b *Bot) Invocations() []enginetest.Invocation {
	return enginetest.ReadLog(b.T, b.AgentLog)
}

// Logger is the tests' logger: quiet unless GOLEM_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("GOLEM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
