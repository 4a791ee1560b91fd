package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/geminitest"
	"github.com/golem-chat/golem/parser"
)

// These tests run the real Gemini CLI (the pinned version, see
// geminitest.GeminiBin) through the engine against the fake Gemini API in
// engine/geminitest, offline. A run takes a few seconds, most of it the
// CLI's start; they run in parallel.

type realGemini struct {
	bin     string
	srv     *geminitest.Server
	home    string
	workdir string
}

func newRealGemini(t *testing.T) *realGemini {
	t.Helper()
	return &realGemini{bin: geminitest.GeminiBin(t), srv: geminitest.NewServer(t), home: t.TempDir(), workdir: t.TempDir()}
}

func (c *realGemini) newEngine(t *testing.T, scenario string, cfg engine.Config) *engine.Gemini {
	cfg.Command = c.bin
	cfg.Env = geminitest.CLIVars(t, c.home, c.srv.BaseURL(scenario))
	return engine.NewGemini(cfg)
}

func (c *realGemini) run(t *testing.T, e *engine.Gemini, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Workdir == "" {
		turn.Workdir = c.workdir
	}
	return realRun(t, e, turn)
}

// geminiDone returns the run's done event, failing the test when it ended
// with an error, and checks what every successful run's done carries.
func geminiDone(t *testing.T, events []parser.Event) parser.Event {
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
		t.Errorf("done session id %q is not a session UUID", last.SessionID)
	}
	if st.DurationMS == nil || *st.DurationMS <= 0 {
		t.Errorf("done duration_ms %v, want a positive duration", st.DurationMS)
	}
	if st.InputTokens == nil || *st.InputTokens <= 0 || st.OutputTokens == nil || *st.OutputTokens <= 0 {
		t.Errorf("done tokens in %v out %v, want the usage the fake reported", st.InputTokens, st.OutputTokens)
	}
	return last
}

func TestGeminiRealPlainAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, prompt, model string
	}{
		{name: "plain", prompt: "Say hello."},
		{name: "model", prompt: "Say hello.", model: "gemini-fake-1"},
		// Over Linux's 128 KiB argument limit the prompt goes on stdin.
		{name: "prompt over 128 KiB", prompt: strings.Repeat("word ", 40<<10) + "Say hello."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRealGemini(t)
			turn := engine.Turn{Prompt: tc.prompt, Model: tc.model, APIKey: "key-of-the-turn"}
			events := c.run(t, c.newEngine(t, geminitest.ScenarioText, engine.Config{}), turn)

			if got := textOf(events); got != geminitest.TextAnswer {
				t.Errorf("answer %q, want %q (the echoed prompt and the thought are not answer text); events: %s", got, geminitest.TextAnswer, realDump(events))
			}
			if n := realCount(events, parser.Text); n < 2 {
				t.Errorf("the answer came in %d text events, want it streamed in several", n)
			}
			geminiDone(t, events)
			reqs := c.srv.StreamRequests(geminitest.ScenarioText)
			if len(reqs) != 1 {
				t.Fatalf("the CLI made %d model calls, want 1", len(reqs))
			}
			if got := reqs[0].Header.Get("X-Goog-Api-Key"); got != "key-of-the-turn" {
				t.Errorf("the CLI sent API key %q, want the turn's key", got)
			}
			if got := reqs[0].LastUser(); strings.TrimSpace(got) != tc.prompt {
				t.Errorf("the model call's prompt is %d bytes ending %q, want the turn's %d bytes", len(got), got[max(0, len(got)-20):], len(tc.prompt))
			}
			if tc.model != "" && reqs[0].Model != tc.model {
				t.Errorf("the CLI asked for model %q, want the turn's %q", reqs[0].Model, tc.model)
			}
			if got := reqs[0].Workdir(); got != c.workdir {
				t.Errorf("the CLI ran in %q, want the turn's workdir %q", got, c.workdir)
			}
			if u := c.srv.Unexpected(); len(u) > 0 {
				t.Errorf("the CLI made requests the fake does not know: %v", u)
			}
		})
	}
}

func TestGeminiRealShell(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	events := c.run(t, c.newEngine(t, geminitest.ScenarioBash, engine.Config{}), engine.Turn{Prompt: "Run echo hi."})

	call, result := onlyTool(t, events)
	var args struct{ Command string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "run_shell_command" || args.Command != "echo hi" {
		t.Errorf("tool_call %s %s (%v), want run_shell_command {command: echo hi}", call.Name, call.Args, err)
	}
	if result.IsError || strings.TrimSpace(result.Content) != "hi" {
		t.Errorf("tool_result %+v, want the output of the command the CLI really ran", result)
	}
	if got := textOf(events); got != geminitest.BashAnswer {
		t.Errorf("answer %q, want %q", got, geminitest.BashAnswer)
	}
	geminiDone(t, events)
}

func TestGeminiRealFileWrite(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	events := c.run(t, c.newEngine(t, geminitest.ScenarioWrite, engine.Config{}), engine.Turn{Prompt: "Write a note."})

	call, result := onlyTool(t, events)
	path := filepath.Join(c.workdir, geminitest.WriteFile)
	var args struct {
		FilePath string `json:"file_path"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "write_file" || args.FilePath != path {
		t.Errorf("tool_call %s %s (%v), want write_file {file_path: %s}", call.Name, call.Args, err, path)
	}
	if result.IsError {
		t.Errorf("tool_result %+v, want success", result)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != geminitest.WriteContent {
		t.Errorf("the tool left %q (%v), want %q", b, err, geminitest.WriteContent)
	}
	if got := textOf(events); got != geminitest.WriteAnswer {
		t.Errorf("answer %q, want %q", got, geminitest.WriteAnswer)
	}
	geminiDone(t, events)
}

func TestGeminiRealAPIError(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	events := c.run(t, c.newEngine(t, geminitest.ScenarioError, engine.Config{}), engine.Turn{Prompt: "Say hello."})

	last := events[len(events)-1]
	if last.Type != parser.Error || last.Message != geminitest.ErrorMessage {
		t.Errorf("the run ended with %s %q, want the API's message %q; events: %s", last.Type, last.Message, geminitest.ErrorMessage, realDump(events))
	}
	if len(events) != 1 {
		t.Errorf("%d events, want only the error; events: %s", len(events), realDump(events))
	}
}

// TestGeminiRealRateLimited shows what a user sees while the CLI retries a
// 429: nothing. The CLI prints no line while it retries (for minutes);
// only the turn's timeout or /stop ends the wait.
func TestGeminiRealRateLimited(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	var calls atomic.Int64
	retrying := make(chan struct{})
	c.srv.Handle("limited", func(r *geminitest.Request) geminitest.Reply {
		if calls.Add(1) == 2 {
			close(retrying)
		}
		return geminitest.Reply{Status: 429, ErrorMessage: "Resource has been exhausted (geminitest)."}
	})
	ctx, cancel := context.WithTimeout(context.Background(), realRunTimeout)
	defer cancel()
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()
	r, err := c.newEngine(t, "limited", engine.Config{}).Run(stop, engine.Turn{Prompt: "Say hello.", Workdir: c.workdir, Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-retrying:
	case <-ctx.Done():
		t.Fatal("the CLI did not retry the 429")
	}
	stopNow()
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	if len(events) != 1 || events[0].Reason != parser.Stopped {
		t.Errorf("events while the CLI retried a 429, then /stop: %s; want only the stop", realDump(events))
	}
}

func TestGeminiRealResume(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	e := c.newEngine(t, geminitest.ScenarioText, engine.Config{})
	first := geminiDone(t, c.run(t, e, engine.Turn{Prompt: "My name is Ada."}))

	events := c.run(t, e, engine.Turn{Prompt: "What is my name?", SessionID: first.SessionID})
	if n := realCount(events, parser.Warning); n != 0 {
		t.Fatalf("resuming an existing session warned; events: %s", realDump(events))
	}
	if d := geminiDone(t, events); d.SessionID != first.SessionID {
		t.Errorf("the resumed run ended with session %s, want the same session %s", d.SessionID, first.SessionID)
	}
	reqs := c.srv.StreamRequests(geminitest.ScenarioText)
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	all := strings.Join(reqs[1].Transcript(), "\n")
	iFirst := strings.Index(all, "My name is Ada.")
	iAnswer := strings.Index(all, "model: "+geminitest.TextAnswer)
	iSecond := strings.Index(all, "What is my name?")
	if iFirst < 0 || iAnswer < iFirst || iSecond < iAnswer {
		t.Errorf("the resumed model call does not carry the earlier prompt and answer before the new prompt:\n%s", all)
	}
}

func TestGeminiRealResumeUnknown(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	const unknown = "0f6a3c52-8d7e-4b1a-9c2d-3e4f5a6b7c8d"
	events := c.run(t, c.newEngine(t, geminitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.", SessionID: unknown})

	if events[0].Type != parser.Warning || !events[0].SessionReset {
		t.Fatalf("the first event is %s (session reset %v), want a warning that resets the session; events: %s",
			events[0].Type, events[0].SessionReset, realDump(events))
	}
	if realCount(events, parser.Warning) != 1 || realCount(events, parser.Error) != 0 {
		t.Errorf("want exactly one warning and no error; events: %s", realDump(events))
	}
	if d := geminiDone(t, events); d.SessionID == unknown {
		t.Errorf("done keeps the unknown session id %s", unknown)
	}
	if got := textOf(events); got != geminitest.TextAnswer {
		t.Errorf("answer %q after the fallback, want %q", got, geminitest.TextAnswer)
	}
}

func TestGeminiRealSkills(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	skills, description := realSkill(t)
	geminiDone(t, c.run(t, c.newEngine(t, geminitest.ScenarioText, engine.Config{SkillsDir: skills}), engine.Turn{Prompt: "Greet the team."}))

	reqs := c.srv.StreamRequests(geminitest.ScenarioText)
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	body := string(reqs[0].Body)
	// The CLI found the linked skill itself ...
	if !strings.Contains(body, `<name>team-greeting</name>\n    <description>`+description) {
		t.Errorf("the model call does not list the injected skill team-greeting among the CLI's skills")
	}
	// ... and read the generated GEMINI.md.
	if !strings.Contains(body, "Context from: "+filepath.Join(c.workdir, "GEMINI.md")) || !strings.Contains(body, ".agents/skills/team-greeting/SKILL.md") {
		t.Errorf("the model call does not carry the generated GEMINI.md")
	}
}

func TestGeminiRealStop(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	c.srv.Handle("sleep", func(r *geminitest.Request) geminitest.Reply {
		if r.Step() == 0 {
			return geminitest.Call("run_shell_command", map[string]any{"command": sleepCommand, "description": "Sleep"})
		}
		return geminitest.Text("slept")
	})
	realStop(t, c.newEngine(t, "sleep", engine.Config{}), c.workdir)
}

// TestGeminiRealModes: plan mode (--approval-mode plan) refuses the
// model's write; accept-edits (auto_edit) lets it write but refuses a
// shell command, which headless it cannot ask about.
func TestGeminiRealModes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      engine.Mode
		scenario  string
		wantWrite bool
	}{
		{"plan refuses a write", engine.ModePlan, geminitest.ScenarioWrite, false},
		{"accept-edits writes", engine.ModeAcceptEdits, geminitest.ScenarioWrite, true},
		{"accept-edits refuses a command", engine.ModeAcceptEdits, geminitest.ScenarioBash, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRealGemini(t)
			events := c.run(t, c.newEngine(t, tc.scenario, engine.Config{}), engine.Turn{Prompt: "Do it.", Mode: tc.mode})

			_, err := os.Stat(filepath.Join(c.workdir, geminitest.WriteFile))
			if wrote := err == nil; tc.scenario == geminitest.ScenarioWrite && wrote != tc.wantWrite {
				t.Errorf("wrote %s: %v, want %v; events: %s", geminitest.WriteFile, wrote, tc.wantWrite, realDump(events))
			}
			for _, ev := range events {
				if ev.Type == parser.ToolResult && ev.IsError == tc.wantWrite {
					t.Errorf("tool result %+v in %s; events: %s", ev, tc.mode, realDump(events))
				}
				if tc.scenario == geminitest.ScenarioBash && ev.Type == parser.ToolResult && strings.TrimSpace(ev.Content) == "hi" {
					t.Errorf("the command ran in %s: %+v", tc.mode, ev)
				}
			}
		})
	}
}
