package core_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
)

// TestSessionsDeskToChatAndBack runs the real Claude Code CLI against the
// fake Messages API: a session started in a terminal is listed by
// /sessions, resumed in the chat, and continued in a terminal again with
// the command /session gives; it stays one session throughout.
func TestSessionsDeskToChatAndBack(t *testing.T) {
	bin := anthropictest.ClaudeBin(t)
	srv := anthropictest.NewServer(t)
	home := t.TempDir()
	url := srv.BaseURL(anthropictest.ScenarioText)
	h := newHarness(t, core.Limits{MaxLen: 4000}, func(o *core.Options) {
		o.Engines["claude-code"] = engine.NewClaudeCode(engine.Config{Command: bin, Env: anthropictest.CLIVars(home, url)})
		o.Permissions.Mode = engine.ModeBypass
	})
	s := &sessionsHarness{harness: h}
	workdir := h.opts.Workspace
	terminal := func(cmdline string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", cmdline)
		cmd.Dir, cmd.Env = t.TempDir(), anthropictest.CLIEnv(home, url)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, out)
		}
		var res struct {
			SessionID string `json:"session_id"`
			IsError   bool   `json:"is_error"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.IsError || res.SessionID == "" {
			t.Fatalf("%s: %s (%v)", cmdline, out, err)
		}
		return res.SessionID
	}
	desk := terminal("cd " + workdir + " && " + bin + " -p 'started at the desk' --output-format json --dangerously-skip-permissions")

	list := s.ask("alice", "/sessions")
	if !strings.Contains(list, "`"+desk[:8]+"` · ") || !strings.Contains(list, "1 prompt · “started at the desk”") {
		t.Fatalf("/sessions does not show the desk's session %s:\n%s", desk, list)
	}
	if got := s.ask("alice", "/resume "+desk[:6]); !strings.Contains(got, "now continues session `"+desk[:8]+"`") {
		t.Fatalf("/resume: %q", got)
	}
	s.say("alice", "from the phone")
	h.rec.waitText(anthropictest.TextAnswer)
	conv, err := h.store.Conversation(core.KeyFor(core.Message{Platform: "rec", Channel: "C1"}, h.opts.Scope))
	if err != nil || conv.SessionID != desk {
		t.Fatalf("after the chat's turn the session is %q (%v), want the desk's %s", conv.SessionID, err, desk)
	}

	cmd := s.ask("alice", "/session")
	_, block, _ := strings.Cut(cmd, "```sh\n")
	line, _, _ := strings.Cut(block, "\n```")
	if !strings.HasPrefix(line, "cd "+workdir+" && CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude")+" ") {
		t.Fatalf("/session: %q", cmd)
	}
	if back := terminal(line + " -p 'back at the desk' --output-format json --dangerously-skip-permissions"); back != desk {
		t.Errorf("the terminal continued session %s, want %s", back, desk)
	}
	if list := s.ask("alice", "/sessions"); !strings.Contains(list, "`"+desk[:8]+"` · ") || !strings.Contains(list, "3 prompts · “started at the desk” ← **this conversation**") {
		t.Errorf("/sessions after the round trip:\n%s", list)
	}
}
