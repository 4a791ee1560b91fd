package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// fake returns an engine named name ("claude-code" or "cursor") running the
// fake agent, and the path of the fake's invocation log.
func fake(t testing.TB, name string, cfg engine.Config) (engine.Engine, string) {
	t.Helper()
	spec, ok := engine.Find(name)
	if !ok {
		t.Fatalf("no engine %q", name)
	}
	set := spec.NewSettings()
	*set.Base() = cfg
	return fakeWith(t, name, set)
}

// fakeWith is fake with the engine's own settings too.
func fakeWith(t testing.TB, name string, set engine.Settings) (engine.Engine, string) {
	t.Helper()
	cfg := set.Base()
	cfg.Command = enginetest.Build(t)
	if name == "cursor" {
		cfg.Command = enginetest.BuildCursor(t)
	}
	logPath := filepath.Join(t.TempDir(), "fake-agent.log")
	env := map[string]string{"FAKE_AGENT_LOG": logPath}
	for k, v := range cfg.Env {
		env[k] = v
	}
	cfg.Env = env
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := set.Engine()
	if e.Name() != name {
		t.Fatalf("settings of %s given for %s", e.Name(), name)
	}
	if spec, _ := engine.Find(name); !spec.Honours(engine.ModeAsk) {
		e = bypassByDefault{e} // these tests are not about modes
	}
	return e, logPath
}

// bypassByDefault runs an engine that cannot ask in bypass mode unless the
// turn names a mode.
type bypassByDefault struct{ engine.Engine }

func (e bypassByDefault) Run(ctx context.Context, t engine.Turn) (*engine.Run, error) {
	if t.Mode == "" {
		t.Mode = engine.ModeBypass
	}
	return e.Engine.Run(ctx, t)
}

// collect reads the run's events until the channel closes, and checks the
// contract: exactly one terminal event, last.
func collect(t testing.TB, r *engine.Run) []parser.Event {
	t.Helper()
	var events []parser.Event
	deadline := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				checkTerminal(t, events)
				return events
			}
			events = append(events, ev)
		case <-deadline:
			t.Fatalf("run did not end; events so far: %+v", events)
		}
	}
}

func checkTerminal(t testing.TB, events []parser.Event) {
	t.Helper()
	for i, ev := range events {
		if ev.Terminal() != (i == len(events)-1) {
			t.Fatalf("terminal event at %d of %d: %+v", i, len(events), events)
		}
	}
	if len(events) == 0 {
		t.Fatal("no events; want a terminal one")
	}
}

// runTurn runs one turn to its end and returns its events.
func runTurn(t testing.TB, e engine.Engine, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Workdir == "" {
		turn.Workdir = t.TempDir()
	}
	r, err := e.Run(context.Background(), turn)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return collect(t, r)
}

// textOf is the concatenated text of events.
func textOf(events []parser.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Type == parser.Text {
			b.WriteString(ev.Content)
		}
	}
	return b.String()
}

func lastEvent(events []parser.Event) parser.Event { return events[len(events)-1] }

func TestArgv(t *testing.T) {
	// The prompt goes on stdin as a user message (Invocation.Prompt), in
	// ask mode unless the turn says otherwise.
	claudeBase := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages",
		"--permission-mode", "default", "--permission-prompt-tool", "stdio"}
	cursorBase := []string{"--output-format", "stream-json", "--stream-partial-output", "--force", "--trust",
		"--sandbox", "disabled", "--approve-mcps"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	// whole is Claude Code with partial_messages: false.
	whole := func() engine.Settings {
		off := false
		return &engine.ClaudeCodeSettings{PartialMessages: &off}
	}
	tests := []struct {
		name   string
		engine string
		cfg    engine.Config
		turn   engine.Turn
		want   []string
		prompt string          // as the CLI got it
		set    engine.Settings // when set, cfg is its Base
	}{
		{"claude plain", "claude-code", engine.Config{}, engine.Turn{Prompt: "hi"},
			cat(claudeBase, []string{"--include-partial-messages"}), "hi", nil},
		{"claude resume model args", "claude-code", engine.Config{Args: []string{"--max-turns", "3"}},
			engine.Turn{Prompt: "hi", SessionID: "s-1", Model: "opus"},
			cat(claudeBase, []string{"--include-partial-messages", "--resume", "s-1", "--model", "opus", "--max-turns", "3"}), "hi", nil},
		{"claude no partial messages", "claude-code", engine.Config{}, engine.Turn{Prompt: "hi"},
			claudeBase, "hi", whole()},
		{"claude key is not an arg", "claude-code", engine.Config{}, engine.Turn{Prompt: "hi", APIKey: "k"},
			cat(claudeBase, []string{"--include-partial-messages"}), "hi", nil},
		{"claude prompt like a flag", "claude-code", engine.Config{}, engine.Turn{Prompt: "-v please"},
			claudeBase, " -v please", whole()},
		{"claude NUL in the prompt", "claude-code", engine.Config{}, engine.Turn{Prompt: "a\x00b"},
			claudeBase, "a\uFFFDb", whole()},
		{"claude files", "claude-code", engine.Config{}, engine.Turn{Prompt: "see", Files: []string{"/in/a.png", "/in/b.txt"}},
			claudeBase, "see\n\nAttached files: /in/a.png, /in/b.txt", whole()},
		{"claude bypass", "claude-code", engine.Config{}, engine.Turn{Prompt: "hi", Mode: engine.ModeBypass},
			[]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages",
				"--dangerously-skip-permissions"}, "hi", whole()},
		{"claude accept edits", "claude-code", engine.Config{}, engine.Turn{Prompt: "hi", Mode: engine.ModeAcceptEdits},
			[]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages",
				"--permission-mode", "acceptEdits", "--permission-prompt-tool", "stdio"}, "hi", whole()},
		{"claude plan", "claude-code", engine.Config{}, engine.Turn{Prompt: "hi", Mode: engine.ModePlan},
			[]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages",
				"--permission-mode", "plan", "--permission-prompt-tool", "stdio"}, "hi", whole()},
		{"cursor plain", "cursor", engine.Config{}, engine.Turn{Prompt: "hi", Mode: engine.ModeBypass},
			cat([]string{"-p", "hi"}, cursorBase), "hi", nil},
		// The key goes only in CURSOR_API_KEY (see TestEnv): a command
		// line is visible to every local user.
		{"cursor resume model key args", "cursor", engine.Config{Args: []string{"--print"}},
			engine.Turn{Prompt: "hi", SessionID: "s-2", Model: "gpt-5", APIKey: "ck", Mode: engine.ModeBypass},
			cat([]string{"-p", "hi"}, cursorBase, []string{"--resume", "s-2", "--model", "gpt-5", "--print"}), "hi", nil},
		{"cursor config key", "cursor", engine.Config{APIKey: "cfg"}, engine.Turn{Prompt: "hi", Mode: engine.ModeBypass},
			cat([]string{"-p", "hi"}, cursorBase), "hi", nil},
		{"config model", "cursor", engine.Config{Model: "m1"}, engine.Turn{Prompt: "hi", Mode: engine.ModeBypass},
			cat([]string{"-p", "hi"}, cursorBase, []string{"--model", "m1"}), "hi", nil},
		{"turn model wins", "claude-code", engine.Config{Model: "m1"}, engine.Turn{Prompt: "hi", Model: "m2"},
			cat(claudeBase, []string{"--include-partial-messages", "--model", "m2"}), "hi", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e engine.Engine
			var logPath string
			if tc.set != nil {
				*tc.set.Base() = tc.cfg
				e, logPath = fakeWith(t, tc.engine, tc.set)
			} else {
				e, logPath = fake(t, tc.engine, tc.cfg)
			}
			tc.turn.Workdir = t.TempDir()
			events := runTurn(t, e, tc.turn)
			if ev := lastEvent(events); ev.Type != parser.Done {
				t.Fatalf("terminal = %+v", ev)
			}
			invs := enginetest.ReadLog(t, logPath)
			if len(invs) != 1 {
				t.Fatalf("%d invocations, want 1", len(invs))
			}
			if got := invs[0].Argv[1:]; !slices.Equal(got, tc.want) {
				t.Errorf("argv\n got %q\nwant %q", got, tc.want)
			}
			if got := invs[0].Prompt; got != tc.prompt {
				t.Errorf("prompt %q, want %q", got, tc.prompt)
			}
			wd, _ := filepath.EvalSymlinks(tc.turn.Workdir)
			if cwd, _ := filepath.EvalSymlinks(invs[0].Cwd); cwd != wd {
				t.Errorf("cwd = %s, want %s", cwd, wd)
			}
		})
	}
}

// TestEnv checks the child's environment: the key passthrough both ways,
// Config.Env, and CLAUDECODE always removed. It sets process variables, so
// it does not run in parallel.
func TestEnv(t *testing.T) {
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("ANTHROPIC_API_KEY", "parent-anthropic")
	t.Setenv("CURSOR_API_KEY", "parent-cursor")
	unset := "<unset>"
	tests := []struct {
		name      string
		engine    string
		cfg       engine.Config
		key       string
		anthropic string
		cursor    string
		extra     string
	}{
		{"claude turn key", "claude-code", engine.Config{}, "turn-key", "turn-key", unset, unset},
		{"claude config key", "claude-code", engine.Config{APIKey: "cfg-key"}, "", "cfg-key", unset, unset},
		{"claude turn key wins", "claude-code", engine.Config{APIKey: "cfg-key"}, "turn-key", "turn-key", unset, unset},
		{"claude inherits its own key", "claude-code", engine.Config{}, "", "parent-anthropic", unset, unset},
		{"claude config env", "claude-code", engine.Config{Env: map[string]string{"GOLEM_TEST_EXTRA": "x", "CLAUDECODE": "1"}}, "",
			"parent-anthropic", unset, "x"},
		{"claude passes another engine's key when told", "claude-code", engine.Config{PassEnv: []string{"CURSOR_API_KEY"}}, "",
			"parent-anthropic", "parent-cursor", unset},
		{"a withheld variable is not inherited", "claude-code", engine.Config{Withhold: []string{"ANTHROPIC_API_KEY"}}, "",
			unset, unset, unset},
		{"cursor turn key", "cursor", engine.Config{}, "turn-key", unset, "turn-key", unset},
		{"cursor config key", "cursor", engine.Config{APIKey: "cfg-key"}, "", unset, "cfg-key", unset},
		{"cursor inherits its own key", "cursor", engine.Config{}, "", unset, "parent-cursor", unset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, logPath := fake(t, tc.engine, tc.cfg)
			runTurn(t, e, engine.Turn{Prompt: "hi", APIKey: tc.key})
			env := enginetest.ReadLog(t, logPath)[0].Env
			get := func(k string) string {
				if v, ok := env[k]; ok {
					return v
				}
				return unset
			}
			if got := get("CLAUDECODE"); got != unset {
				t.Errorf("CLAUDECODE = %q in the child; want it removed", got)
			}
			for k, want := range map[string]string{"ANTHROPIC_API_KEY": tc.anthropic, "CURSOR_API_KEY": tc.cursor,
				"GOLEM_TEST_EXTRA": tc.extra} {
				if got := get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestEnvAllowlist: of golem's own environment the agent gets the
// session's basics, the locale, the proxies and its CLI's own settings,
// what pass_env names, and nothing else: not the platform tokens, not
// golem's HTTP token, not a variable the configuration expanded. It sets
// process variables, so it does not run in parallel.
func TestEnvAllowlist(t *testing.T) {
	given := map[string]string{
		"SLACK_BOT_TOKEN": "xoxb-secret", "SLACK_APP_TOKEN": "xapp-secret", "TELEGRAM_BOT_TOKEN": "123:secret",
		"DISCORD_BOT_TOKEN": "discord-secret", "GOLEM_HTTP_TOKEN": "http-secret", "GOLEM_TEST_INHERITED": "yes",
		"GH_TOKEN": "gh-passed-on", "AWS_SECRET_ACCESS_KEY": "aws-secret",
		"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "TERM": "xterm", "HTTPS_PROXY": "http://127.0.0.1:9",
		"no_proxy": "localhost", "CLAUDE_CODE_MAX_RETRIES": "2", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
		"OPENAI_API_KEY": "another-engine", "MY_SETTING": "expanded-by-bot-yaml",
	}
	for k, v := range given {
		t.Setenv(k, v)
	}
	e, logPath := fake(t, "claude-code", engine.Config{PassEnv: []string{"GH_TOKEN", "MY_SETTING"}, Withhold: []string{"MY_SETTING"}})
	runTurn(t, e, engine.Turn{Prompt: "hi", Workdir: t.TempDir()})
	got := map[string]string{}
	for _, kv := range enginetest.ReadLog(t, logPath)[0].Environ {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TERM", "HTTPS_PROXY", "no_proxy",
		"CLAUDE_CODE_MAX_RETRIES", "ANTHROPIC_BASE_URL", "GH_TOKEN", "FAKE_AGENT_LOG"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s did not reach the agent", k)
		}
	}
	for _, k := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN",
		"GOLEM_HTTP_TOKEN", "GOLEM_TEST_INHERITED", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "MY_SETTING"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s=%s reached the agent", k, v)
		}
	}
	for k, v := range got {
		if strings.Contains(v, "secret") {
			t.Errorf("%s=%s reached the agent", k, v)
		}
	}
}

// TestLookup checks the order configured command → PATH → ~/.local/bin and
// the not-installed error. It sets PATH and HOME, so it is not parallel.
func TestLookup(t *testing.T) {
	home, pathDir, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PATH", pathDir)
	localBin := filepath.Join(home, ".local", "bin")
	if err := os.MkdirAll(localBin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := func(dir, name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inLocal := script(localBin, "claude")
	if got, err := engine.NewClaudeCode(engine.Config{}).Lookup(); err != nil || got != inLocal {
		t.Errorf("~/.local/bin: Lookup() = %q, %v; want %q", got, err, inLocal)
	}
	inPath := script(pathDir, "claude")
	if got, err := engine.NewClaudeCode(engine.Config{}).Lookup(); err != nil || got != inPath {
		t.Errorf("PATH before ~/.local/bin: Lookup() = %q, %v; want %q", got, err, inPath)
	}
	configured := script(elsewhere, "my-claude")
	if got, err := engine.NewClaudeCode(engine.Config{Command: configured}).Lookup(); err != nil || got != configured {
		t.Errorf("configured path: Lookup() = %q, %v; want %q", got, err, configured)
	}
	named := script(pathDir, "claude-nightly")
	if got, err := engine.NewClaudeCode(engine.Config{Command: "claude-nightly"}).Lookup(); err != nil || got != named {
		t.Errorf("configured name: Lookup() = %q, %v; want %q", got, err, named)
	}

	for _, tc := range []struct {
		engine engine.Engine
		hint   string
	}{
		{engine.NewClaudeCode(engine.Config{Command: filepath.Join(elsewhere, "missing")}), "@anthropic-ai/claude-code"},
		{engine.NewCursor(engine.Config{}), "Cursor's CLI"},
	} {
		_, err := tc.engine.Lookup()
		if !errors.Is(err, engine.ErrNotInstalled) || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("%s: Lookup() error = %v; want ErrNotInstalled saying %q", tc.engine.Name(), err, tc.hint)
		}
		if _, err := tc.engine.Run(context.Background(), engine.Turn{Prompt: "x", Workdir: t.TempDir()}); !errors.Is(err, engine.ErrNotInstalled) {
			t.Errorf("%s: Run error = %v; want ErrNotInstalled", tc.engine.Name(), err)
		}
	}
}

// TestInstalledLater checks that Run looks the CLI up each time.
func TestInstalledLater(t *testing.T) {
	dir := t.TempDir()
	e := engine.NewCursor(engine.Config{Command: filepath.Join(dir, "agent")})
	if _, err := e.Run(context.Background(), engine.Turn{Prompt: "x", Workdir: dir}); !errors.Is(err, engine.ErrNotInstalled) {
		t.Fatalf("before install: %v", err)
	}
	if err := os.Symlink(enginetest.Build(t), filepath.Join(dir, "agent")); err != nil {
		t.Fatal(err)
	}
	events := runTurn(t, e, engine.Turn{Prompt: "now", Workdir: dir, Mode: engine.ModeBypass})
	if lastEvent(events).Type != parser.Done || textOf(events) != "echo: now" {
		t.Errorf("after install: %+v", events)
	}
}

func TestNewUnknownEngine(t *testing.T) {
	if _, err := engine.New("no-such-cli", engine.Config{}); err == nil {
		t.Error("New(no-such-cli) succeeded")
	} else if !errors.Is(err, engine.ErrUnknown) {
		t.Errorf("New(no-such-cli): %v, want it to wrap ErrUnknown", err)
	}
}
