package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/parser"
)

// These tests run the real Claude Code CLI (the pinned version, see
// anthropictest.ClaudeBin) through the engine against the fake Messages API
// in engine/anthropictest, offline. A run takes one to three seconds; the
// tests run in parallel.

// runTimeout bounds one run: a hang fails the test instead of the suite.
const runTimeout = 60 * time.Second

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// realClaude is one test's CLI setup: a fresh HOME, a workdir and the fake.
type realClaude struct {
	bin     string
	srv     *anthropictest.Server
	home    string
	workdir string
}

func newRealClaude(t *testing.T) *realClaude {
	t.Helper()
	return &realClaude{
		bin:     anthropictest.ClaudeBin(t),
		srv:     anthropictest.NewServer(t),
		home:    t.TempDir(),
		workdir: t.TempDir(),
	}
}

// engine returns a Claude Code engine that runs the real CLI against
// scenario, with the test's HOME.
func (c *realClaude) engine(scenario string, cfg engine.Config) *engine.ClaudeCode {
	cfg.Command = c.bin
	cfg.Env = anthropictest.CLIVars(c.home, c.srv.BaseURL(scenario))
	return engine.NewClaudeCode(cfg)
}

// run runs one turn to its end and returns all its events. It fails the
// test if the events channel is not closed within runTimeout, or if the
// run's events break the one-terminal-event rule.
func (c *realClaude) run(t *testing.T, e *engine.ClaudeCode, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Workdir == "" {
		turn.Workdir = c.workdir
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r, err := e.Run(ctx, turn)
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	if len(events) == 0 {
		t.Fatal("the run delivered no events")
	}
	for i, ev := range events {
		if ev.Terminal() != (i == len(events)-1) {
			t.Fatalf("event %d of %d (%s) terminal=%v; events: %s", i, len(events), ev.Type, ev.Terminal(), dump(events))
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the run did not end within %s: %s", runTimeout, dump(events))
	}
	return events
}

func dump(events []parser.Event) string {
	var b strings.Builder
	for _, ev := range events {
		j, _ := json.Marshal(ev)
		b.WriteString("\n  ")
		b.Write(j)
		if ev.SessionReset {
			b.WriteString(" (session reset)")
		}
	}
	return b.String()
}

// answer joins the text events: what the user reads.
func answer(events []parser.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Type == parser.Text {
			b.WriteString(ev.Content)
		}
	}
	return b.String()
}

func count(events []parser.Event, typ parser.Type) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// done returns the run's done event, failing the test when it ended with
// an error. It checks what every successful run's done carries.
func done(t *testing.T, events []parser.Event) parser.Event {
	t.Helper()
	last := events[len(events)-1]
	if last.Type != parser.Done {
		t.Fatalf("the run ended with %s %q, want done; events: %s", last.Type, last.Message, dump(events))
	}
	if !uuidPattern.MatchString(last.SessionID) {
		t.Errorf("done session id %q is not a session UUID", last.SessionID)
	}
	if last.DurationMS == nil || *last.DurationMS <= 0 {
		t.Errorf("done duration_ms %v, want a positive duration", last.DurationMS)
	}
	if last.CostUSD == nil || *last.CostUSD <= 0 {
		t.Errorf("done cost_usd %v, want a positive cost (the fake reports token usage)", last.CostUSD)
	}
	if last.NumTurns == nil {
		t.Error("done without num_turns")
	}
	return last
}

func TestClaudeRealPlainAnswer(t *testing.T) {
	tests := []struct {
		name      string
		cfg       engine.Config
		minPieces int // text events the answer arrives in
	}{
		// Partial messages (the default) stream the text delta by delta.
		{"partial messages", engine.Config{}, 2},
		{"whole messages", engine.Config{NoPartialMessages: true}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRealClaude(t)
			events := c.run(t, c.engine(anthropictest.ScenarioText, tc.cfg),
				engine.Turn{Prompt: "Say hello.", APIKey: "key-of-the-turn"})

			if got := answer(events); got != anthropictest.TextAnswer {
				t.Errorf("answer %q, want %q; events: %s", got, anthropictest.TextAnswer, dump(events))
			}
			if n := count(events, parser.Text); n < tc.minPieces || (tc.minPieces == 1 && n != 1) {
				t.Errorf("the answer came in %d text events, want %d or more (exactly 1 without partial messages)", n, tc.minPieces)
			}
			d := done(t, events)
			if *d.NumTurns != 1 {
				t.Errorf("num_turns %d, want 1", *d.NumTurns)
			}
			reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
			if len(reqs) != 1 {
				t.Fatalf("the CLI made %d model calls, want 1", len(reqs))
			}
			if got := reqs[0].Header.Get("X-Api-Key"); got != "key-of-the-turn" {
				t.Errorf("the CLI sent API key %q, want the turn's key", got)
			}
			if !strings.Contains(reqs[0].LastUser().Text(), "Say hello.") || !reqs[0].Stream {
				t.Errorf("the model call does not carry the prompt as a stream request: %s", reqs[0].Body)
			}
			if reqs[0].Workdir() != c.workdir {
				t.Errorf("the CLI ran in %q, want the turn's workdir %q", reqs[0].Workdir(), c.workdir)
			}
			if u := c.srv.Unexpected(); len(u) > 0 {
				t.Errorf("the CLI made requests the fake does not know: %v", u)
			}
		})
	}
}

func TestClaudeRealBashTool(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events := c.run(t, c.engine(anthropictest.ScenarioBash, engine.Config{}), engine.Turn{Prompt: "Run echo hi."})

	var call, result *parser.Event
	for i, ev := range events {
		switch ev.Type {
		case parser.ToolCall:
			call = &events[i]
		case parser.ToolResult:
			result = &events[i]
			if call == nil {
				t.Error("tool_result before tool_call")
			}
		}
	}
	if call == nil || result == nil || count(events, parser.ToolCall) != 1 || count(events, parser.ToolResult) != 1 {
		t.Fatalf("want one tool_call and one tool_result; events: %s", dump(events))
	}
	var args struct{ Command string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "Bash" || args.Command != "echo hi" || call.ID != "toolu_bash_1" {
		t.Errorf("tool_call %s %s %s (%v), want Bash toolu_bash_1 {command: echo hi}", call.Name, call.ID, call.Args, err)
	}
	if result.ID != call.ID || result.IsError || strings.TrimSpace(result.Content) != "hi" {
		t.Errorf("tool_result %+v, want the output of the command the CLI really ran", *result)
	}
	if got := answer(events); got != anthropictest.BashAnswer {
		t.Errorf("answer %q, want %q", got, anthropictest.BashAnswer)
	}
	if d := done(t, events); *d.NumTurns != 2 {
		t.Errorf("num_turns %d, want 2", *d.NumTurns)
	}
	reqs := c.srv.MessageRequests(anthropictest.ScenarioBash)
	if len(reqs) != 2 {
		t.Fatalf("the CLI made %d model calls, want 2", len(reqs))
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || res[0].ToolUseID != "toolu_bash_1" || strings.TrimSpace(res[0].ResultText()) != "hi" {
		t.Errorf("the second model call carries tool results %+v, want the Bash output", res)
	}
}

func TestClaudeRealSeveralTools(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events := c.run(t, c.engine(anthropictest.ScenarioTools, engine.Config{}),
		engine.Turn{Prompt: "Run a command, write a note, read it back."})

	calls := map[string]parser.Event{}
	var names []string
	results := map[string]parser.Event{}
	for _, ev := range events {
		switch ev.Type {
		case parser.ToolCall:
			calls[ev.ID] = ev
			names = append(names, ev.Name)
		case parser.ToolResult:
			if _, ok := calls[ev.ID]; !ok {
				t.Errorf("tool_result %s without an earlier tool_call", ev.ID)
			}
			results[ev.ID] = ev
		}
	}
	if strings.Join(names, ",") != "Bash,Write,Read,Read" {
		t.Errorf("tools called %v, want Bash, Write, Read, Read; events: %s", names, dump(events))
	}
	want := map[string]struct {
		isError bool
		has     string
	}{
		"toolu_tools_bash":    {false, "one"},
		"toolu_tools_write":   {false, anthropictest.ToolsNoteFile},
		"toolu_tools_read":    {false, strings.TrimSpace(anthropictest.ToolsNote)},
		"toolu_tools_missing": {true, "does not exist"},
	}
	for id, w := range want {
		r, ok := results[id]
		if !ok {
			t.Errorf("no tool_result for %s", id)
			continue
		}
		if r.IsError != w.isError || !strings.Contains(r.Content, w.has) {
			t.Errorf("tool_result %s: is_error=%v content %q; want is_error=%v and %q", id, r.IsError, r.Content, w.isError, w.has)
		}
	}
	if got := answer(events); !strings.HasPrefix(got, "Let me run a command") || !strings.HasSuffix(got, anthropictest.ToolsAnswer) {
		t.Errorf("answer %q, want the first message's text and then %q", got, anthropictest.ToolsAnswer)
	}
	done(t, events)
	note, err := os.ReadFile(filepath.Join(c.workdir, anthropictest.ToolsNoteFile))
	if err != nil || string(note) != anthropictest.ToolsNote {
		t.Errorf("the Write tool left %q (%v) in the workdir, want %q", note, err, anthropictest.ToolsNote)
	}
}

func TestClaudeRealOverloaded(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events := c.run(t, c.engine(anthropictest.ScenarioOverloaded, engine.Config{}), engine.Turn{Prompt: "Say hello."})

	last := events[len(events)-1]
	if last.Type != parser.Error || !strings.Contains(last.Message, "529") || !strings.Contains(last.Message, "Overloaded") {
		t.Errorf("the run ended with %s %q, want an error naming 529 Overloaded", last.Type, last.Message)
	}
	if n := count(events, parser.Error); n != 1 {
		t.Errorf("%d error events, want exactly one", n)
	}
	// The CLI also prints the error as a synthetic assistant message; it
	// must not reach the user as answer text besides the error.
	if got := answer(events); got != "" {
		t.Errorf("answer text %q on an API error, want none", got)
	}
	if n := count(events, parser.Warning); n != 0 {
		t.Errorf("%d warnings, want none (a fresh session is not resumed); events: %s", n, dump(events))
	}
	// CLAUDE_CODE_MAX_RETRIES=2: the first call and two retries.
	if n := len(c.srv.MessageRequests(anthropictest.ScenarioOverloaded)); n != 3 {
		t.Errorf("the CLI made %d model calls, want 3", n)
	}
}

func TestClaudeRealResume(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	e := c.engine(anthropictest.ScenarioText, engine.Config{})
	first := done(t, c.run(t, e, engine.Turn{Prompt: "My name is Ada."}))

	events := c.run(t, e, engine.Turn{Prompt: "What is my name?", SessionID: first.SessionID})
	if n := count(events, parser.Warning); n != 0 {
		t.Fatalf("resuming an existing session warned; events: %s", dump(events))
	}
	if d := done(t, events); d.SessionID != first.SessionID {
		t.Errorf("the resumed run ended with session %s, want the same session %s", d.SessionID, first.SessionID)
	}
	if got := answer(events); got != anthropictest.TextAnswer {
		t.Errorf("answer %q", got)
	}
	reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	// The resumed call carries the earlier exchange before the new prompt.
	var convo []string
	for _, m := range reqs[1].Messages {
		if m.Role != "system" {
			convo = append(convo, m.Role+": "+m.Text())
		}
	}
	all := strings.Join(convo, "\n")
	iFirst := strings.Index(all, "My name is Ada.")
	iAnswer := strings.Index(all, "assistant: "+anthropictest.TextAnswer)
	iSecond := strings.Index(all, "What is my name?")
	if iFirst < 0 || iAnswer < iFirst || iSecond < iAnswer {
		t.Errorf("the resumed model call does not carry the earlier prompt and answer before the new prompt:\n%s", all)
	}
}

func TestClaudeRealResumeUnknownSession(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	const unknown = "0f6a3c52-8d7e-4b1a-9c2d-3e4f5a6b7c8d"
	events := c.run(t, c.engine(anthropictest.ScenarioText, engine.Config{}),
		engine.Turn{Prompt: "Say hello.", SessionID: unknown})

	if events[0].Type != parser.Warning || !events[0].SessionReset {
		t.Fatalf("the first event is %s (session reset %v), want a warning that resets the session; events: %s",
			events[0].Type, events[0].SessionReset, dump(events))
	}
	if count(events, parser.Warning) != 1 || count(events, parser.Error) != 0 {
		t.Errorf("want exactly one warning and no error; events: %s", dump(events))
	}
	d := done(t, events)
	if d.SessionID == unknown {
		t.Errorf("done keeps the unknown session id %s, want the new session's", unknown)
	}
	if got := answer(events); got != anthropictest.TextAnswer {
		t.Errorf("answer %q after the fallback, want %q", got, anthropictest.TextAnswer)
	}
	// The unknown id never reached the model; the retry made one call.
	if n := len(c.srv.MessageRequests(anthropictest.ScenarioText)); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}
