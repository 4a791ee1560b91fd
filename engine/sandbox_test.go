package engine_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// hostFixture is what a sandboxed agent must not see or reach: a home
// with an SSH key, golem's store and a file outside the workspace, and two
// local servers, one allowed.
type hostFixture struct {
	home, store, outside, work string
	allowed, refused           *httptest.Server
}

func newHostFixture(t *testing.T) hostFixture {
	t.Helper()
	root := sandboxtest.Dir(t)
	f := hostFixture{home: filepath.Join(root, "home"), store: filepath.Join(root, "data"),
		outside: filepath.Join(root, "elsewhere"), work: filepath.Join(root, "workspace")}
	writeFiles(t, map[string]string{
		filepath.Join(f.home, ".ssh", "id_ed25519"): "PRIVATE KEY",
		filepath.Join(f.store, "golem.db"):          "store-secret",
		filepath.Join(f.outside, "file"):            "outside",
		filepath.Join(f.work, "README"):             "work",
	})
	serve := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from "+name) }))
		t.Cleanup(srv.Close)
		return srv
	}
	f.allowed, f.refused = serve("the allowed host"), serve("the refused host")
	return f
}

func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// toolOutputs returns the results of the run's tool calls, in order.
func toolOutputs(events []parser.Event) []parser.Event {
	var out []parser.Event
	for _, ev := range events {
		if ev.Type == parser.ToolResult {
			out = append(out, ev)
		}
	}
	return out
}

// TestSandboxedFakeAgent: the fake agent's shell commands in its sandbox
// (network: allowlist) cannot read the store or the SSH key, find no
// token in their environment, are refused a host that is not allowed with
// the proxy's 403 naming sandbox.allow_hosts, reach an allowed one, and
// cannot write outside the workspace (a failed tool); the answer still
// comes.
func TestSandboxedFakeAgent(t *testing.T) {
	f := newHostFixture(t)
	t.Setenv("HOME", f.home)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-secret")
	logDir := sandboxtest.Dir(t)
	sb := sandboxtest.New(t, sandbox.Config{AllowHosts: []string{hostOf(f.allowed)}, Writable: []string{logDir}},
		sandbox.Options{Hide: []string{f.store}})
	e, _ := fake(t, "claude-code", engine.Config{Env: map[string]string{"FAKE_AGENT_LOG": filepath.Join(logDir, "log")}})
	prompt := strings.Join([]string{
		"!sh cat " + f.store + "/golem.db " + f.home + "/.ssh/id_ed25519",
		"!sh env",
		"!sh curl -sS -m 20 " + f.refused.URL,
		"!sh curl -sS -m 20 " + f.allowed.URL,
		"!sh echo x > " + f.outside + "/file",
		"!sh echo mine > made.txt && cat made.txt",
		"done",
	}, "\n")
	events := runTurn(t, e, engine.Turn{Prompt: prompt, Workdir: f.work,
		Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: f.work})})
	res := toolOutputs(events)
	if len(res) != 6 {
		t.Fatalf("%d tool results, want 6: %+v", len(res), events)
	}
	if strings.Contains(res[0].Content, "secret") || strings.Contains(res[0].Content, "PRIVATE") {
		t.Errorf("cat of the store and the key printed %q", res[0].Content)
	}
	if strings.Contains(res[1].Content, "xoxb") || !strings.Contains(res[1].Content, "HOME=") {
		t.Errorf("env printed %q", res[1].Content)
	}
	if !strings.Contains(res[2].Content, "sandbox.allow_hosts") || strings.Contains(res[2].Content, "hello") {
		t.Errorf("curl of a refused host printed %q", res[2].Content)
	}
	if res[3].Content != "hello from the allowed host" {
		t.Errorf("curl of an allowed host printed %q", res[3].Content)
	}
	if !res[4].IsError || !strings.Contains(res[4].Content, "Read-only file system") {
		t.Errorf("a write outside: %+v, want a failed tool saying the file system is read-only", res[4])
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "file")); string(b) != "outside" {
		t.Errorf("the file outside now holds %q", b)
	}
	if strings.TrimSpace(res[5].Content) != "mine" {
		t.Errorf("a write in the workspace: %q", res[5].Content)
	}
	if last := events[len(events)-1]; last.Type != parser.Done || !strings.Contains(textOf(events), "echo: done") {
		t.Errorf("the run ended with %+v", last)
	}
}

// TestSandboxFailsToStart: a turn whose bwrap fails (here a bwrap that
// refuses once, as one does when user namespaces are turned off under a
// running golem) ends with an error saying the sandbox could not start and
// why; the next turn runs.
func TestSandboxFailsToStart(t *testing.T) {
	e, logPath := fake(t, "claude-code", engine.Config{})
	sb := onceWrappedSandbox(t, sandbox.Config{Network: sandbox.None, Writable: []string{filepath.Dir(logPath)}},
		"echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1")
	work := t.TempDir()
	turn := engine.Turn{Prompt: "hi", Workdir: work, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: work})}
	events := runTurn(t, e, turn)
	last := events[len(events)-1]
	if last.Type != parser.Error || !strings.Contains(last.Message, "the agent's sandbox could not start") ||
		!strings.Contains(last.Message, "setting up uid map: Permission denied") {
		t.Errorf("the failed sandbox's turn ended with %+v", last)
	}
	if events := runTurn(t, e, turn); textOf(events) != "echo: hi" {
		t.Errorf("the next turn: %+v", events)
	}
}

// TestSandboxProxyPortFails: where the proxy's port cannot open in the
// sandbox (here a bwrap that does not pass golem's socket on), the turn
// ends with an error saying the sandbox could not start and why, the CLI
// never runs, and the next turn runs.
func TestSandboxProxyPortFails(t *testing.T) {
	e, logPath := fake(t, "claude-code", engine.Config{})
	sb := onceWrappedSandbox(t, sandbox.Config{Writable: []string{filepath.Dir(logPath)}}, "exec 5>&-")
	work := sandboxtest.Dir(t)
	turn := engine.Turn{Prompt: "hi", Workdir: work, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: work})}
	events := runTurn(t, e, turn)
	last := events[len(events)-1]
	if last.Type != parser.Error || !strings.Contains(last.Message, "the agent's sandbox could not start") ||
		!strings.Contains(last.Message, "could not open the proxy's port 127.0.0.1:3128 inside") {
		t.Errorf("the turn whose proxy port failed ended with %+v", last)
	}
	if invs := enginetest.ReadLog(t, logPath); len(invs) != 0 {
		t.Errorf("the CLI ran %d times", len(invs))
	}
	if events := runTurn(t, e, turn); textOf(events) != "echo: hi" {
		t.Errorf("the next turn: %+v", events)
	}
}

// onceWrappedSandbox returns a sandbox of cfg (mode on) whose bwrap is a
// script that runs once first, the first time only, then execs bwrap.
func onceWrappedSandbox(t *testing.T, cfg sandbox.Config, once string) *sandbox.Sandbox {
	t.Helper()
	sandboxtest.Require(t)
	dir := t.TempDir()
	flag := filepath.Join(dir, "once")
	os.WriteFile(flag, nil, 0o644)
	wrapper := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\nif [ -e " + flag + " ]; then rm " + flag + "; " + once + "; fi\nexec bwrap \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Mode = sandbox.ModeOn
	sb, err := sandbox.New(context.Background(), cfg, sandbox.Options{Probe: func(ctx context.Context) sandbox.Status {
		st := sandbox.Probe(ctx)
		st.Bwrap = wrapper
		return st
	}})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}
