package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bot.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigShippedFile(t *testing.T) {
	c, err := LoadConfig("../bot.yaml", false)
	if err != nil {
		t.Fatalf("the shipped bot.yaml does not load: %v", err)
	}
	if c.Engine != "claude-code" || c.HTTP.Listen != "127.0.0.1:8080" {
		t.Errorf("unexpected defaults: engine %q, http.listen %q", c.Engine, c.HTTP.Listen)
	}
}

func TestLoadConfigMissingFileUsesDefaults(t *testing.T) {
	c, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 10*time.Minute || c.MaxConcurrent != 8 || c.QueueDepth != 5 {
		t.Errorf("defaults not applied: %+v", c)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"), false); err == nil {
		t.Error("a named config file that is missing must be an error")
	}
}

func TestLoadConfigExpandsEnvironment(t *testing.T) {
	t.Setenv("GOLEM_TEST_TOKEN", `xoxb-1: "quoted" # not a comment`)
	path := writeConfig(t, "slack:\n  bot_token: ${GOLEM_TEST_TOKEN}\n  app_token: ${GOLEM_TEST_UNSET}\ntimeout: 90s\n")
	c, err := LoadConfig(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Slack.BotToken != `xoxb-1: "quoted" # not a comment` {
		t.Errorf("bot_token = %q", c.Slack.BotToken)
	}
	if c.Slack.AppToken != "" {
		t.Errorf("an unset variable must expand to empty, got %q", c.Slack.AppToken)
	}
	if c.Timeout != 90*time.Second {
		t.Errorf("timeout = %v", c.Timeout)
	}
	if c.Slack.APIURL != "https://slack.com/api/" {
		t.Errorf("defaults under a partly given section must stay: api_url = %q", c.Slack.APIURL)
	}
}

func TestLoadConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct{ body, want string }{
		{"engnie: cursor\n", "engnie"},
		{"slack:\n  bot_tokn: x\n", "bot_tokn"},
		{"engine: aider\n", "engine"},
		{"session_scope: team\n", "session_scope"},
		{"timeout: soon\n", "timeout"},
		{"max_concurrent: 0\n", "max_concurrent"},
		{"access:\n  allow: [alice]\n", "access.allow"},
		{"http:\n  listen: 0.0.0.0:8080\n", "http.listen"},
		{"channels:\n  C1: {engine: cursor}\n", "channels"},
		{"log_level: loud\n", "log_level"},
	}
	for _, tc := range cases {
		_, err := LoadConfig(writeConfig(t, tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v does not name %q", tc.body, err, tc.want)
		}
	}
}

func TestConfigPathsResolveFromTheFile(t *testing.T) {
	path := writeConfig(t, "workspace: ./ws\nstore: /abs/golem.db\n")
	c, err := LoadConfig(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Path(c.Workspace), filepath.Join(filepath.Dir(path), "ws"); got != want {
		t.Errorf("workspace = %q, want %q", got, want)
	}
	if c.Path(c.Store) != "/abs/golem.db" {
		t.Errorf("absolute path changed: %q", c.Path(c.Store))
	}
}

func FuzzLoadConfig(f *testing.F) {
	f.Add("engine: cursor\ntimeout: 5m\n")
	f.Add("access:\n  allow: ['*']\nchannels:\n  slack:C1: {model: x}\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := DefaultConfig()
		if err := c.parse([]byte(body)); err == nil {
			_ = c.Validate()
		}
	})
}
