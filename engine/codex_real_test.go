package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/openaitest"
	"github.com/golem-chat/golem/parser"
)

// These tests run the real Codex CLI (the pinned version, see
// openaitest.CodexBin) through the engine against the fake Responses API in
// engine/openaitest, offline. A run takes about a second; they run in
// parallel.

// realCodex is one test's CLI setup: a fresh HOME (and CODEX_HOME), a
// workdir and the fake.
type realCodex struct {
	bin     string
	srv     *openaitest.Server
	home    string
	workdir string
}

func newRealCodex(t *testing.T) *realCodex {
	t.Helper()
	return &realCodex{bin: openaitest.CodexBin(t), srv: openaitest.NewServer(t), home: t.TempDir(), workdir: t.TempDir()}
}

// newEngine returns a Codex engine that runs the real CLI against scenario.
func (c *realCodex) newEngine(scenario string, cfg engine.Config) *engine.Codex {
	cfg.Command = c.bin
	cfg.Env = openaitest.CLIVars(c.home, c.srv.BaseURL(scenario))
	return engine.NewCodex(cfg)
}

func (c *realCodex) run(t *testing.T, e *engine.Codex, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Workdir == "" {
		turn.Workdir = c.workdir
	}
	return realRun(t, e, turn)
}

// codexDone returns the run's done event, failing the test when it ended
// with an error, and checks what every successful Codex run's done carries:
// the thread id and the token usage.
func codexDone(t *testing.T, events []parser.Event) parser.Event {
	t.Helper()
	last := events[len(events)-1]
	if last.Type != parser.Done {
		t.Fatalf("the run ended with %s %q, want done; events: %s", last.Type, last.Message, realDump(events))
	}
	if last.Stats == nil {
		t.Fatalf("done %+v has no run statistics", last)
	}
	st := last.Stats
	if !realUUID.MatchString(last.SessionID) {
		t.Errorf("done session id %q is not a thread UUID", last.SessionID)
	}
	if st.InputTokens == nil || *st.InputTokens <= 0 || st.OutputTokens == nil || *st.OutputTokens <= 0 {
		t.Errorf("done tokens in %v out %v, want the usage the fake reported", st.InputTokens, st.OutputTokens)
	}
	return last
}

func TestCodexRealPlainAnswer(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	turn := engine.Turn{Prompt: "Say hello.", APIKey: "key-of-the-turn"}
	events := c.run(t, c.newEngine(openaitest.ScenarioText, engine.Config{}), turn)

	if got := textOf(events); got != openaitest.TextAnswer {
		t.Errorf("answer %q, want %q (reasoning is not answer text); events: %s", got, openaitest.TextAnswer, realDump(events))
	}
	if n := realCount(events, parser.Warning); n != 0 {
		t.Errorf("%d warnings on a plain answer; events: %s", n, realDump(events))
	}
	codexDone(t, events)
	reqs := c.srv.ResponseRequests(openaitest.ScenarioText)
	if len(reqs) != 1 {
		t.Fatalf("the CLI made %d model calls, want 1", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer key-of-the-turn" {
		t.Errorf("the CLI sent Authorization %q, want the turn's key", got)
	}
	if got := reqs[0].LastUser(); got != "Say hello." || !reqs[0].Stream {
		t.Errorf("the model call's last user message is %q (stream %v), want the prompt in a stream request", got, reqs[0].Stream)
	}
	if all := strings.Join(reqs[0].Messages(), "\n"); !strings.Contains(all, "<cwd>"+c.workdir+"</cwd>") {
		t.Errorf("the CLI did not run in the turn's workdir %s:\n%s", c.workdir, all)
	}
	if u := c.srv.Unexpected(); len(u) > 0 {
		t.Errorf("the CLI made requests the fake does not know: %v", u)
	}
}

func TestCodexRealModel(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	events := c.run(t, c.newEngine(openaitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.", Model: "gpt-fake-1"})
	codexDone(t, events)
	if reqs := c.srv.ResponseRequests(openaitest.ScenarioText); len(reqs) != 1 || reqs[0].Model != "gpt-fake-1" {
		t.Fatalf("the model calls %v do not ask for the turn's model", reqs)
	}
	// Codex knows nothing of the fake's model and says so: a warning.
	if realCount(events, parser.Warning) != 1 || !strings.Contains(events[0].Message, "gpt-fake-1") {
		t.Errorf("want one warning about the unknown model first; events: %s", realDump(events))
	}
}

func TestCodexRealShell(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	events := c.run(t, c.newEngine(openaitest.ScenarioBash, engine.Config{}), engine.Turn{Prompt: "Run echo hi."})

	call, result := onlyTool(t, events)
	var args struct{ Command string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "Shell" || !strings.Contains(args.Command, "echo hi") {
		t.Errorf("tool_call %s %s (%v), want Shell {command: ... echo hi}", call.Name, call.Args, err)
	}
	if result.IsError || result.Content != "hi\n" {
		t.Errorf("tool_result %+v, want the output of the command the CLI really ran", result)
	}
	if got := textOf(events); got != openaitest.BashAnswer {
		t.Errorf("answer %q, want %q", got, openaitest.BashAnswer)
	}
	codexDone(t, events)
}

func TestCodexRealFileWrite(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	events := c.run(t, c.newEngine(openaitest.ScenarioWrite, engine.Config{}), engine.Turn{Prompt: "Write a note."})

	call, result := onlyTool(t, events)
	path := filepath.Join(c.workdir, openaitest.WriteFile)
	var args struct{ Path string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "Edit" || args.Path != path {
		t.Errorf("tool_call %s %s (%v), want Edit {path: %s}", call.Name, call.Args, err, path)
	}
	if result.IsError || result.Content != "add "+path {
		t.Errorf("tool_result %+v, want \"add %s\"", result, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != openaitest.WriteContent+"\n" {
		t.Errorf("the patch left %q (%v), want %q", b, err, openaitest.WriteContent)
	}
	if got := textOf(events); got != openaitest.WriteAnswer {
		t.Errorf("answer %q, want %q", got, openaitest.WriteAnswer)
	}
	codexDone(t, events)
}

// onlyTool returns the run's one tool_call and its tool_result.
func onlyTool(t *testing.T, events []parser.Event) (call, result parser.Event) {
	t.Helper()
	if realCount(events, parser.ToolCall) != 1 || realCount(events, parser.ToolResult) != 1 {
		t.Fatalf("want one tool_call and one tool_result; events: %s", realDump(events))
	}
	for _, ev := range events {
		switch ev.Type {
		case parser.ToolCall:
			call = ev
		case parser.ToolResult:
			if call.ID == "" {
				t.Error("tool_result before tool_call")
			}
			result = ev
		}
	}
	if result.ID != call.ID {
		t.Errorf("tool_result id %q, want the call's %q", result.ID, call.ID)
	}
	return call, result
}

func TestCodexRealAPIError(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	events := c.run(t, c.newEngine(openaitest.ScenarioError, engine.Config{}), engine.Turn{Prompt: "Say hello."})

	last := events[len(events)-1]
	if last.Type != parser.Error || last.Message != openaitest.ErrorMessage {
		t.Errorf("the run ended with %s %q, want the API's message %q; events: %s", last.Type, last.Message, openaitest.ErrorMessage, realDump(events))
	}
	// Codex prints the message twice (an error line, then turn.failed);
	// the user sees it once.
	if n := len(events); n != 1 {
		t.Errorf("%d events, want only the error; events: %s", n, realDump(events))
	}
}

func TestCodexRealResume(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	e := c.newEngine(openaitest.ScenarioText, engine.Config{})
	first := codexDone(t, c.run(t, e, engine.Turn{Prompt: "My name is Ada."}))

	events := c.run(t, e, engine.Turn{Prompt: "What is my name?", SessionID: first.SessionID})
	if n := realCount(events, parser.Warning); n != 0 {
		t.Fatalf("resuming an existing session warned; events: %s", realDump(events))
	}
	if d := codexDone(t, events); d.SessionID != first.SessionID {
		t.Errorf("the resumed run ended with session %s, want the same thread %s", d.SessionID, first.SessionID)
	}
	reqs := c.srv.ResponseRequests(openaitest.ScenarioText)
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	all := strings.Join(reqs[1].Messages(), "\n")
	iFirst := strings.Index(all, "user: My name is Ada.")
	iAnswer := strings.Index(all, "assistant: "+openaitest.TextAnswer)
	iSecond := strings.Index(all, "user: What is my name?")
	if iFirst < 0 || iAnswer < iFirst || iSecond < iAnswer {
		t.Errorf("the resumed model call does not carry the earlier prompt and answer before the new prompt:\n%s", all)
	}
}

func TestCodexRealResumeUnknown(t *testing.T) {
	for _, tc := range []struct{ name, session string }{
		// Codex exits 1: "no rollout found for thread id ..." on stderr.
		{"thread id", "0f6a3c52-8d7e-4b1a-9c2d-3e4f5a6b7c8d"},
		// Codex silently starts a new thread.
		{"thread name", "my-old-thread"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRealCodex(t)
			events := c.run(t, c.newEngine(openaitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.", SessionID: tc.session})

			if events[0].Type != parser.Warning || !events[0].SessionReset || !strings.Contains(events[0].Message, tc.session) {
				t.Fatalf("the first event is %s %q (session reset %v), want a warning that resets the session; events: %s",
					events[0].Type, events[0].Message, events[0].SessionReset, realDump(events))
			}
			if realCount(events, parser.Warning) != 1 || realCount(events, parser.Error) != 0 {
				t.Errorf("want exactly one warning and no error; events: %s", realDump(events))
			}
			if d := codexDone(t, events); d.SessionID == tc.session {
				t.Errorf("done keeps the unknown session %s, want the new thread's id", tc.session)
			}
			if got := textOf(events); got != openaitest.TextAnswer {
				t.Errorf("answer %q after the fallback, want %q", got, openaitest.TextAnswer)
			}
			if n := len(c.srv.ResponseRequests(openaitest.ScenarioText)); n != 1 {
				t.Errorf("%d model calls, want 1", n)
			}
		})
	}
}

func TestCodexRealSkills(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	skills, description := realSkill(t)
	codexDone(t, c.run(t, c.newEngine(openaitest.ScenarioText, engine.Config{SkillsDir: skills}), engine.Turn{Prompt: "Greet the team."}))

	reqs := c.srv.ResponseRequests(openaitest.ScenarioText)
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	body := string(reqs[0].Body)
	// Codex found the linked skill itself ...
	if !strings.Contains(body, "team-greeting: "+description) {
		t.Errorf("the model call does not list the injected skill team-greeting among Codex's skills")
	}
	// ... and read the generated AGENTS.md.
	if !strings.Contains(body, "# AGENTS.md instructions for "+c.workdir) || !strings.Contains(body, ".agents/skills/team-greeting/SKILL.md") {
		t.Errorf("the model call does not carry the generated AGENTS.md")
	}
}

func TestCodexRealStop(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	c.srv.Handle("sleep", func(r *openaitest.Request) openaitest.Reply {
		if r.Step() == 0 {
			return openaitest.Reply{Items: []openaitest.Output{openaitest.FunctionCall("call_sleep", "exec_command",
				map[string]any{"cmd": sleepCommand, "yield_time_ms": 30000})}}
		}
		return openaitest.Text("slept")
	})
	realStop(t, c.newEngine("sleep", engine.Config{}), c.workdir)
}

// TestCodexRealPlan: in plan mode (--sandbox read-only) the model's patch
// is refused and nothing is written.
func TestCodexRealPlan(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	events := c.run(t, c.newEngine(openaitest.ScenarioWrite, engine.Config{}), engine.Turn{Prompt: "Write a note.", Mode: engine.ModePlan})

	// Codex prints no item for the refused patch; the model is told.
	reqs := c.srv.ResponseRequests(openaitest.ScenarioWrite)
	if len(reqs) != 2 || len(reqs[1].Outputs()) != 1 || !strings.Contains(reqs[1].Outputs()[0].OutputText(), "read-only sandbox") {
		t.Errorf("the model was not told that the read-only sandbox blocked its patch (%d calls)", len(reqs))
	}
	if _, err := os.Stat(filepath.Join(c.workdir, openaitest.WriteFile)); !os.IsNotExist(err) {
		t.Errorf("plan mode wrote %s (%v); events: %s", openaitest.WriteFile, err, realDump(events))
	}
	for _, ev := range events {
		if ev.Type == parser.ToolResult && !ev.IsError {
			t.Errorf("a tool succeeded in plan mode: %+v", ev)
		}
	}
}
