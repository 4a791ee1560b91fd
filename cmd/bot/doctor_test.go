package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/store"
)

// fakeCLI writes an executable script that plays an agent CLI for
// --version and returns its path.
func fakeCLI(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// doctorEnv gives the test a home of its own and no agent keys, so that
// neither the machine's logins nor its environment decide a check.
func doctorEnv(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
		"CURSOR_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_HOME", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv(k, "")
	}
}

// doctor runs `bot doctor` on a bot.yaml made of yaml plus an engines
// section where claude-code is cli (with a key) and the other engines are
// missing, and returns what it printed and its exit code.
func doctor(t *testing.T, lim doctorLimits, cli, yaml string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := "workspace: ./ws\n"
	if !strings.Contains(yaml, "store:") {
		config += "store: ./data/golem.db\n"
	}
	config += fmt.Sprintf(`engines:
  claude-code: {command: %q, api_key: "sk-ant-test-key-1234"}
  cursor: {command: /nonexistent/agent}
  codex: {command: /nonexistent/codex}
  gemini: {command: /nonexistent/gemini}
http: {listen: ""}
%s`, cli, yaml)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := 0
	if err := runDoctor(context.Background(), []string{"--config", path}, &out, &errOut, lim); err != nil {
		code = 1
	}
	return out.String(), code
}

var testLimits = doctorLimits{probe: 5 * time.Second, total: 20 * time.Second}

// line returns doctor's line for check name.
func line(out, name string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(strings.Join(f[1:], " "), name+" ") {
			return l
		}
	}
	return ""
}

func TestDoctorAllGood(t *testing.T) {
	doctorEnv(t)
	out, code := doctor(t, testLimits, fakeCLI(t, `echo "2.1.197 (Claude Code)"`), "")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	for name, want := range map[string]string{
		"config":             "ok",
		"store":              "ok",
		"engine claude-code": "ok",
		"engine cursor":      "--",
		"slack":              "--",
	} {
		if l := line(out, name); !strings.HasPrefix(l, want+" ") {
			t.Errorf("%s: line %q, want %q first\n%s", name, l, want, out)
		}
	}
	if l := line(out, "engine claude-code"); !strings.Contains(l, "2.1.197 (Claude Code)") || !strings.Contains(l, "api_key is set") {
		t.Errorf("the engine's line names neither its version nor its key: %q", l)
	}
	if strings.Contains(out, "sk-ant-test-key-1234") {
		t.Errorf("the API key was printed:\n%s", out)
	}
	if !strings.Contains(out, "0 failed") {
		t.Errorf("no summary:\n%s", out)
	}
}

func TestDoctorPlatformTokens(t *testing.T) {
	doctorEnv(t)
	cli := fakeCLI(t, `echo 1.0`)
	sl := slacktest.New(slacktest.Options{})
	t.Cleanup(sl.Close)
	tg := telegramtest.New(t, telegramtest.Options{})
	dc := discordtest.New(discordtest.Options{BotToken: "discord-good-token"})
	t.Cleanup(dc.Close)
	cases := []struct {
		name, platform, yaml, secret string
		ok                           bool
	}{
		{"slack good", "slack", fmt.Sprintf("slack: {bot_token: %q, app_token: %q, api_url: %q}", slacktest.BotToken, slacktest.AppToken, sl.URL), slacktest.BotToken, true},
		{"slack bot token refused", "slack", fmt.Sprintf("slack: {bot_token: xoxb-refused-token, app_token: %q, api_url: %q}", slacktest.AppToken, sl.URL), "xoxb-refused-token", false},
		{"slack app token refused", "slack", fmt.Sprintf("slack: {bot_token: %q, app_token: xapp-refused-token, api_url: %q}", slacktest.BotToken, sl.URL), "xapp-refused-token", false},
		{"telegram good", "telegram", fmt.Sprintf("telegram: {token: %q, api_url: %q}", tg.Token(), tg.URL), tg.Token(), true},
		{"telegram refused", "telegram", fmt.Sprintf("telegram: {token: '999:REFUSED', api_url: %q}", tg.URL), "999:REFUSED", false},
		{"discord good", "discord", fmt.Sprintf("discord: {token: discord-good-token, api_url: %q}", dc.URL()), "discord-good-token", true},
		{"discord refused", "discord", fmt.Sprintf("discord: {token: discord-refused-token, api_url: %q}", dc.URL()), "discord-refused-token", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := doctor(t, testLimits, cli, c.yaml)
			l := line(out, c.platform)
			if strings.Contains(out, c.secret) {
				t.Errorf("the token was printed:\n%s", out)
			}
			if c.ok {
				if code != 0 || !strings.HasPrefix(l, "ok ") {
					t.Fatalf("exit %d, line %q; want ok:\n%s", code, l, out)
				}
				return
			}
			if code == 0 || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "token refused") || !strings.Contains(l, " — ") {
				t.Fatalf("exit %d, line %q; want a FAIL saying the token was refused and what to do:\n%s", code, l, out)
			}
		})
	}
	if got := len(sl.Calls("auth.test")); got == 0 {
		t.Error("the Slack fake saw no auth.test")
	}
}

func TestDoctorMissingCLI(t *testing.T) {
	doctorEnv(t)
	out, code := doctor(t, testLimits, "/nonexistent/claude", "")
	l := line(out, "engine claude-code")
	if code == 0 || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "npm install -g @anthropic-ai/claude-code") {
		t.Fatalf("exit %d, line %q; want a FAIL with the install hint:\n%s", code, l, out)
	}
}

func TestDoctorCLIWithoutCredentials(t *testing.T) {
	doctorEnv(t)
	cli := fakeCLI(t, `echo 2.0`)
	dir := t.TempDir()
	config := fmt.Sprintf("engines:\n  claude-code: {command: %q}\nstore: %s\nworkspace: %s\nhttp: {listen: ''}\n", cli, filepath.Join(dir, "db"), dir)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runDoctor(context.Background(), []string{"--config", path}, &out, &out, testLimits)
	l := line(out.String(), "engine claude-code")
	if err == nil || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "no API key and no login") || !strings.Contains(l, ".claude/.credentials.json") {
		t.Fatalf("err %v, line %q; want a FAIL naming the key and the login file", err, l)
	}

	// A login file counts.
	home := os.Getenv("HOME")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = runDoctor(context.Background(), []string{"--config", path}, &out, &out, testLimits)
	if l := line(out.String(), "engine claude-code"); err != nil || !strings.Contains(l, "logged in") {
		t.Fatalf("err %v, line %q; want ok, logged in:\n%s", err, l, out.String())
	}
}

func TestDoctorCLIHangingOnVersion(t *testing.T) {
	doctorEnv(t)
	lim := doctorLimits{probe: 300 * time.Millisecond, total: 20 * time.Second}
	out, code := doctor(t, lim, fakeCLI(t, `sleep 60`), "")
	l := line(out, "engine claude-code")
	if code == 0 || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "does not answer --version") {
		t.Fatalf("exit %d, line %q; want a FAIL for --version:\n%s", code, l, out)
	}
}

func TestDoctorLockedStore(t *testing.T) {
	doctorEnv(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "golem.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out, code := doctor(t, testLimits, fakeCLI(t, `echo 1.0`), "store: "+db+"\n")
	l := line(out, "store")
	if code != 0 || !strings.HasPrefix(l, "-- ") || !strings.Contains(l, "in use by a running bot") {
		t.Fatalf("exit %d, line %q; want a note that a running bot holds it, and exit 0:\n%s", code, l, out)
	}
	if l := line(out, "schedules"); !strings.HasPrefix(l, "-- ") || !strings.Contains(l, "not counted") {
		t.Errorf("the schedules' line with the store locked: %q", l)
	}
}

func TestDoctorBadConfig(t *testing.T) {
	doctorEnv(t)
	out, code := doctor(t, testLimits, "claude", "timeout: soon\n")
	l := line(out, "config")
	if code == 0 || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "timeout") {
		t.Fatalf("exit %d, line %q; want a FAIL naming timeout:\n%s", code, l, out)
	}
}

func TestDoctorWorktreeNeedsARepository(t *testing.T) {
	doctorEnv(t)
	out, code := doctor(t, testLimits, fakeCLI(t, `echo 1.0`), "isolation: worktree\n")
	l := line(out, "workspace")
	if code == 0 || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "git") {
		t.Fatalf("exit %d, line %q; want a FAIL asking for a git repository:\n%s", code, l, out)
	}
}

// TestDoctorSandbox: bot doctor's sandbox line says it works where
// bubblewrap does, and without bubblewrap fails with mode on (naming
// sandbox.mode and what to install) and notes that agents run unsandboxed
// with auto.
func TestDoctorSandbox(t *testing.T) {
	cfg := config.Default()
	if st := sandbox.Probe(context.Background()); st.Works() {
		if f := checkSandbox(context.Background(), cfg); f.v != pass || !strings.Contains(f.text, "bubblewrap works") {
			t.Errorf("where bubblewrap works: %v %s", f.v, f.text)
		}
	}
	t.Setenv("PATH", t.TempDir()) // no bwrap there
	f := checkSandbox(context.Background(), cfg)
	if f.v != note || !strings.Contains(f.text, "WITHOUT a sandbox") || !strings.Contains(f.text, "install it") {
		t.Errorf("auto without bubblewrap: %v %s", f.v, f.text)
	}
	cfg.Sandbox.Mode = sandbox.ModeOn
	f = checkSandbox(context.Background(), cfg)
	if f.v != fail || !strings.Contains(f.text, "sandbox.mode: on") || !strings.Contains(f.text, "bubblewrap is not installed") {
		t.Errorf("on without bubblewrap: %v %s", f.v, f.text)
	}
}
