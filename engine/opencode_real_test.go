package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/parser"
)

// These tests run the real OpenCode CLI (the pinned version, see
// anthropictest.OpenCodeBin) through the engine against the fake Messages
// API in engine/anthropictest (OpenCode's anthropic provider), offline. A
// run takes several seconds, most of it the CLI's start; they run in
// parallel.

type realOpenCode struct {
	bin     string
	srv     *anthropictest.Server
	home    string
	workdir string
}

func newRealOpenCode(t testing.TB) *realOpenCode {
	t.Helper()
	return &realOpenCode{bin: anthropictest.OpenCodeBin(t), srv: anthropictest.NewServer(t), home: t.TempDir(), workdir: t.TempDir()}
}

func (c *realOpenCode) newEngine(scenario string, cfg engine.Config) *engine.OpenCode {
	cfg.Command = c.bin
	cfg.Env = anthropictest.OpenCodeVars(c.home, c.srv.BaseURL(scenario))
	return engine.NewOpenCode(cfg)
}

func (c *realOpenCode) run(t testing.TB, e *engine.OpenCode, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Workdir == "" {
		turn.Workdir = c.workdir
	}
	return realRun(t, e, turn)
}

// openCodeDone returns the run's done event, failing the test when it
// ended with an error, and checks what every successful run's done carries.
func openCodeDone(t *testing.T, events []parser.Event, steps int) parser.Event {
	t.Helper()
	last := events[len(events)-1]
	if last.Type != parser.Done {
		t.Fatalf("the run ended with %s %q, want done; events: %s", last.Type, last.Message, realDump(events))
	}
	if last.Stats == nil {
		t.Fatalf("done %+v has no run statistics", last)
	}
	st := last.Stats
	if !strings.HasPrefix(last.SessionID, "ses_") {
		t.Errorf("done session id %q is not an OpenCode session id", last.SessionID)
	}
	if st.CostUSD == nil || *st.CostUSD <= 0 || st.InputTokens == nil || *st.InputTokens <= 0 || st.OutputTokens == nil || *st.OutputTokens <= 0 {
		t.Errorf("done cost %v tokens in %v out %v, want the usage the fake reported", st.CostUSD, st.InputTokens, st.OutputTokens)
	}
	if st.NumTurns == nil || *st.NumTurns != steps {
		t.Errorf("done num_turns %v, want %d steps", st.NumTurns, steps)
	}
	if st.DurationMS == nil {
		t.Error("done without duration_ms")
	}
	return last
}

func TestOpenCodeRealPlainAnswer(t *testing.T) {
	for _, tc := range []struct{ name, prompt string }{
		{name: "plain", prompt: "Say hello."},
		// Over Linux's 128 KiB argument limit the prompt goes on stdin.
		{name: "prompt over 128 KiB", prompt: strings.Repeat("word ", 40<<10) + "Say hello."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRealOpenCode(t)
			events := c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{}), engine.Turn{Prompt: tc.prompt, APIKey: "key-of-the-turn"})

			if got := textOf(events); got != anthropictest.TextAnswer {
				t.Errorf("answer %q, want %q; events: %s", got, anthropictest.TextAnswer, realDump(events))
			}
			openCodeDone(t, events, 1)
			reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
			if len(reqs) == 0 {
				t.Fatal("the CLI made no model call")
			}
			main := lastAgentCall(t, reqs)
			if got := main.Header.Get("X-Api-Key"); got != "key-of-the-turn" {
				t.Errorf("the CLI sent API key %q, want the turn's key", got)
			}
			if got := main.LastUser().Text(); strings.TrimSpace(got) != tc.prompt {
				t.Errorf("the model call's prompt is %d bytes ending %q, want the turn's %d bytes", len(got), got[max(0, len(got)-20):], len(tc.prompt))
			}
			if got := main.OpenCodeWorkdir(); got != c.workdir {
				t.Errorf("the CLI ran in %q, want the turn's workdir %q", got, c.workdir)
			}
		})
	}
}

// lastAgentCall is the last of the model calls that ran the agent: OpenCode
// also asks for the session's title, in a call of its own without tools
// that runs concurrently, so it may come before or after.
func lastAgentCall(t *testing.T, reqs []*anthropictest.Request) *anthropictest.Request {
	t.Helper()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Tools) > 0 {
			return reqs[i]
		}
	}
	t.Fatalf("none of the CLI's %d model calls offered tools", len(reqs))
	return nil
}

func TestOpenCodeRealShell(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	events := c.run(t, c.newEngine(anthropictest.ScenarioOpenCodeBash, engine.Config{}), engine.Turn{Prompt: "Run echo hi."})

	call, result := onlyTool(t, events)
	var args struct{ Command string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "bash" || args.Command != "echo hi" || call.ID != "toolu_oc_bash" {
		t.Errorf("tool_call %s %s %s (%v), want bash toolu_oc_bash {command: echo hi}", call.Name, call.ID, call.Args, err)
	}
	if result.IsError || strings.TrimSpace(result.Content) != "hi" {
		t.Errorf("tool_result %+v, want the output of the command the CLI really ran", result)
	}
	if got := textOf(events); got != anthropictest.BashAnswer {
		t.Errorf("answer %q, want %q", got, anthropictest.BashAnswer)
	}
	openCodeDone(t, events, 2)
}

func TestOpenCodeRealFileWrite(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	events := c.run(t, c.newEngine(anthropictest.ScenarioOpenCodeWrite, engine.Config{}), engine.Turn{Prompt: "Write a note."})

	call, result := onlyTool(t, events)
	path := filepath.Join(c.workdir, anthropictest.OpenCodeWriteFile)
	var args struct{ FilePath string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "write" || args.FilePath != path {
		t.Errorf("tool_call %s %s (%v), want write {filePath: %s}", call.Name, call.Args, err, path)
	}
	if result.IsError {
		t.Errorf("tool_result %+v, want success", result)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != anthropictest.ToolsNote {
		t.Errorf("the tool left %q (%v), want %q", b, err, anthropictest.ToolsNote)
	}
	if got := textOf(events); got != anthropictest.OpenCodeWriteAnswer {
		t.Errorf("answer %q, want %q", got, anthropictest.OpenCodeWriteAnswer)
	}
	openCodeDone(t, events, 2)
}

func TestOpenCodeRealAPIError(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	events := c.run(t, c.newEngine(anthropictest.ScenarioOpenCodeError, engine.Config{}), engine.Turn{Prompt: "Say hello."})

	last := events[len(events)-1]
	if last.Type != parser.Error || last.Message != anthropictest.OpenCodeErrorText {
		t.Errorf("the run ended with %s %q, want the API's message %q; events: %s", last.Type, last.Message, anthropictest.OpenCodeErrorText, realDump(events))
	}
	if len(events) != 1 {
		t.Errorf("%d events, want only the error; events: %s", len(events), realDump(events))
	}
}

func TestOpenCodeRealResume(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	e := c.newEngine(anthropictest.ScenarioText, engine.Config{})
	first := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "My name is Ada."}), 1)

	events := c.run(t, e, engine.Turn{Prompt: "What is my name?", SessionID: first.SessionID})
	if n := realCount(events, parser.Warning); n != 0 {
		t.Fatalf("resuming an existing session warned; events: %s", realDump(events))
	}
	if d := openCodeDone(t, events, 1); d.SessionID != first.SessionID {
		t.Errorf("the resumed run ended with session %s, want the same session %s", d.SessionID, first.SessionID)
	}
	reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
	var convo []string
	for _, m := range lastAgentCall(t, reqs).Messages {
		convo = append(convo, m.Role+": "+m.Text())
	}
	all := strings.Join(convo, "\n")
	iFirst := strings.Index(all, "My name is Ada.")
	iAnswer := strings.Index(all, "assistant: "+anthropictest.TextAnswer)
	iSecond := strings.Index(all, "What is my name?")
	if iFirst < 0 || iAnswer < iFirst || iSecond < iAnswer {
		t.Errorf("the resumed model call does not carry the earlier prompt and answer before the new prompt:\n%s", all)
	}
}

func TestOpenCodeRealResumeUnknown(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	const unknown = "ses_0f6a3c528d7e4b1a9c2d3e4f5a"
	events := c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.", SessionID: unknown})

	if events[0].Type != parser.Warning || !events[0].SessionReset {
		t.Fatalf("the first event is %s (session reset %v), want a warning that resets the session; events: %s",
			events[0].Type, events[0].SessionReset, realDump(events))
	}
	if realCount(events, parser.Warning) != 1 || realCount(events, parser.Error) != 0 {
		t.Errorf("want exactly one warning and no error; events: %s", realDump(events))
	}
	if d := openCodeDone(t, events, 1); d.SessionID == unknown {
		t.Errorf("done keeps the unknown session id %s", unknown)
	}
	if got := textOf(events); got != anthropictest.TextAnswer {
		t.Errorf("answer %q after the fallback, want %q", got, anthropictest.TextAnswer)
	}
}

func TestOpenCodeRealSkills(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	skills, description := realSkill(t)
	openCodeDone(t, c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{SkillsDir: skills}), engine.Turn{Prompt: "Greet the team."}), 1)

	reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
	body := string(lastAgentCall(t, reqs).Body)
	if !strings.Contains(body, "team-greeting") || !strings.Contains(body, description) {
		t.Errorf("the model call does not offer the injected skill team-greeting")
	}
	if !strings.Contains(body, ".agents/skills/team-greeting/SKILL.md") {
		t.Errorf("the model call does not carry the generated AGENTS.md")
	}
}

func TestOpenCodeRealStop(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	c.srv.Handle("sleep", func(r *anthropictest.Request) anthropictest.Reply {
		if r.Step() == 0 {
			return anthropictest.Reply{Blocks: []anthropictest.Block{anthropictest.ToolUse("toolu_sleep", "bash",
				map[string]string{"command": sleepCommand, "description": "Sleep"})}}
		}
		return anthropictest.Text("slept")
	})
	realStop(t, c.newEngine("sleep", engine.Config{}), c.workdir)
}
