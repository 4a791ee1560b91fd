package engine_test

import (
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/engine/geminitest"
	"github.com/golem-chat/golem/engine/openaitest"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// TestRealCLIsSandboxed: Codex, the Gemini CLI and OpenCode answer from
// inside golem's sandbox (network: allowlist) against their fake APIs,
// which the proxy lets through as their base URL settings name them;
// OpenCode's base URL is in its own config, which golem does not read, so
// its host is in allow_hosts, as the README tells an operator to do.
func TestRealCLIsSandboxed(t *testing.T) {
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		c := newRealCodex(t)
		c.home, c.workdir = sandboxtest.Dir(t), sandboxtest.Dir(t)
		sb := sandboxtest.New(t, sandbox.Config{}, sandbox.Options{})
		events := c.run(t, c.newEngine(openaitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.",
			Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: c.workdir})})
		if got := textOf(events); got != openaitest.TextAnswer {
			t.Errorf("answer %q; events: %s", got, realDump(events))
		}
	})
	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		c := newRealGemini(t)
		c.home, c.workdir = sandboxtest.Dir(t), sandboxtest.Dir(t)
		sb := sandboxtest.New(t, sandbox.Config{}, sandbox.Options{})
		events := c.run(t, c.newEngine(t, geminitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.",
			Mode: engine.ModeBypass, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: c.workdir})})
		if got := textOf(events); got != geminitest.TextAnswer {
			t.Errorf("answer %q; events: %s", got, realDump(events))
		}
	})
	t.Run("opencode", func(t *testing.T) {
		t.Parallel()
		c := newRealOpenCode(t)
		c.home, c.workdir = sandboxtest.Dir(t), sandboxtest.Dir(t)
		sb := sandboxtest.New(t, sandbox.Config{AllowHosts: []string{strings.TrimPrefix(c.srv.URL, "http://")}}, sandbox.Options{})
		events := c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.",
			Mode: engine.ModeBypass, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: c.workdir})})
		if got := textOf(events); got != anthropictest.TextAnswer {
			t.Errorf("answer %q; events: %s", got, realDump(events))
		}
	})
}
