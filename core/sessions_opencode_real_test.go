package core_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
)

// TestSessionsOpenCodeDeskToChatAndBack runs the real OpenCode CLI against
// the fake Messages API: a session started in a terminal is listed by
// /sessions (through `opencode session list`), resumed in the chat by a
// prefix of its ses_ id, and continued in a terminal with the session
// /session names; it stays one session throughout.
func TestSessionsOpenCodeDeskToChatAndBack(t *testing.T) {
	bin := anthropictest.OpenCodeBin(t)
	srv := anthropictest.NewServer(t)
	home := t.TempDir()
	vars := anthropictest.OpenCodeVars(home, srv.BaseURL(anthropictest.ScenarioText))
	h := newHarness(t, core.Limits{MaxLen: 4000}, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"opencode": engine.NewOpenCode(engine.Config{Command: bin, Env: vars})}
		o.DefaultEngine = "opencode"
		o.Permissions.Mode = engine.ModeBypass
	})
	s := &sessionsHarness{harness: h}
	workdir := h.opts.Workspace
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "HOME" && !strings.HasPrefix(name, "XDG_") && !strings.HasPrefix(name, "OPENCODE") {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	terminal := func(cmdline string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", cmdline)
		cmd.Dir, cmd.Env = t.TempDir(), env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, out)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			var ev struct {
				SessionID string `json:"sessionID"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.SessionID != "" {
				return ev.SessionID
			}
		}
		t.Fatalf("%s printed no session id: %s", cmdline, out)
		return ""
	}
	desk := terminal("cd " + workdir + " && echo 'started at the desk' | " + bin + " run --format json --auto --dir " + workdir)

	list := s.ask("alice", "/sessions")
	if !strings.Contains(list, "`"+desk[:8]) || !strings.Contains(list, "1 prompt · “started at the desk”") {
		t.Fatalf("/sessions does not show the desk's session %s:\n%s", desk, list)
	}
	if got := s.ask("alice", "/resume "+desk[:12]); !strings.Contains(got, "now continues session `"+desk[:8]) {
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
	if !strings.HasPrefix(line, "cd "+workdir+" && ") || !strings.HasSuffix(line, bin+" --session "+desk) {
		t.Fatalf("/session: %q", cmd)
	}
	// The line opens OpenCode's interface; a test runs its one-shot form
	// with the same folder, environment and session.
	oneShot := strings.Replace(line, bin+" --session ", "echo 'back at the desk' | "+bin+" run --format json --auto --dir "+workdir+" --session ", 1)
	if back := terminal(oneShot); back != desk {
		t.Errorf("the terminal continued session %s, want %s", back, desk)
	}
	if list := s.ask("alice", "/sessions"); !strings.Contains(list, "3 prompts · “started at the desk” ← **this conversation**") {
		t.Errorf("/sessions after the round trip:\n%s", list)
	}
}
