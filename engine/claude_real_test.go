package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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

// realRunTimeout bounds one run: a hang fails the test instead of the
// suite. Generous: a CLI starts slowly on a busy machine.
const realRunTimeout = 2 * time.Minute

var realUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

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
func (c *realClaude) newEngine(scenario string, cfg engine.Config) *engine.ClaudeCode {
	return c.newEngineWith(scenario, engine.ClaudeCodeSettings{Config: cfg})
}

// newEngineWith is newEngine with Claude Code's own settings too.
func (c *realClaude) newEngineWith(scenario string, set engine.ClaudeCodeSettings) *engine.ClaudeCode {
	set.Command = c.bin
	set.Env = anthropictest.CLIVars(c.home, c.srv.BaseURL(scenario))
	return set.ClaudeCode()
}

// run runs one turn to its end and returns all its events (see realRun).
func (c *realClaude) run(t *testing.T, e *engine.ClaudeCode, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Workdir == "" {
		turn.Workdir = c.workdir
	}
	return realRun(t, e, turn)
}

// realRun runs one turn of a real CLI to its end and returns all its
// events. It fails the test if the events channel is not closed within
// realRunTimeout, or if the run's events break the one-terminal-event rule.
func realRun(t testing.TB, e engine.Engine, turn engine.Turn) []parser.Event {
	t.Helper()
	if turn.Mode == "" {
		turn.Mode = engine.ModeBypass // the approval tests name their modes
	}
	ctx, cancel := context.WithTimeout(context.Background(), realRunTimeout)
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
			t.Fatalf("event %d of %d (%s) terminal=%v; events: %s", i, len(events), ev.Type, ev.Terminal(), realDump(events))
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the run did not end within %s: %s", realRunTimeout, realDump(events))
	}
	return events
}

func realDump(events []parser.Event) string {
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

func realCount(events []parser.Event, typ parser.Type) int {
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
func realDone(t *testing.T, events []parser.Event) parser.Event {
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
	if st.CostUSD == nil || *st.CostUSD <= 0 {
		t.Errorf("done cost_usd %v, want a positive cost (the fake reports token usage)", st.CostUSD)
	}
	if st.NumTurns == nil {
		t.Error("done without num_turns")
	}
	return last
}

func TestClaudeRealPlainAnswer(t *testing.T) {
	tests := []struct {
		name      string
		cfg       engine.Config
		whole     bool   // partial_messages: false
		model     string // Turn.Model
		attach    bool   // attach a file from the workdir's inbox
		prompt    string // default "Say hello."
		minPieces int    // text events the answer arrives in
	}{
		// Partial messages (the default) stream the text delta by delta.
		{name: "partial messages", minPieces: 2},
		{name: "whole messages", whole: true, minPieces: 1},
		{name: "model and attachment", model: "claude-haiku-4-5", attach: true, minPieces: 2},
		// Over Linux's 128 KiB argument limit the prompt goes on stdin.
		{name: "prompt over 128 KiB", prompt: strings.Repeat("word ", 40<<10) + "Say hello.", minPieces: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRealClaude(t)
			if tc.prompt == "" {
				tc.prompt = "Say hello."
			}
			turn := engine.Turn{Prompt: tc.prompt, APIKey: "key-of-the-turn", Model: tc.model}
			if tc.attach {
				file := filepath.Join(c.workdir, "inbox", "notes.txt")
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte("notes\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				turn.Files = []string{file}
			}
			partial := !tc.whole
			set := engine.ClaudeCodeSettings{Config: tc.cfg, PartialMessages: &partial}
			events := c.run(t, c.newEngineWith(anthropictest.ScenarioText, set), turn)

			if got := textOf(events); got != anthropictest.TextAnswer {
				t.Errorf("answer %q, want %q; events: %s", got, anthropictest.TextAnswer, realDump(events))
			}
			if n := realCount(events, parser.Text); n < tc.minPieces || (tc.minPieces == 1 && n != 1) {
				t.Errorf("the answer came in %d text events, want %d or more (exactly 1 without partial messages)", n, tc.minPieces)
			}
			d := realDone(t, events)
			if *d.Stats.NumTurns != 1 {
				t.Errorf("num_turns %d, want 1", *d.Stats.NumTurns)
			}
			reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
			if len(reqs) != 1 {
				t.Fatalf("the CLI made %d model calls, want 1", len(reqs))
			}
			if got := reqs[0].Header.Get("X-Api-Key"); got != "key-of-the-turn" {
				t.Errorf("the CLI sent API key %q, want the turn's key", got)
			}
			prompt := reqs[0].LastUser().Text()
			if !strings.Contains(prompt, "Say hello.") || !reqs[0].Stream {
				t.Errorf("the model call does not carry the prompt as a stream request: %s", reqs[0].Body)
			}
			for _, f := range turn.Files {
				if !strings.Contains(prompt, f) {
					t.Errorf("the prompt the model got does not name the attached file %s:\n%s", f, prompt)
				}
			}
			if tc.model != "" && reqs[0].Model != tc.model {
				t.Errorf("the CLI asked for model %q, want the turn's %q", reqs[0].Model, tc.model)
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
	events := c.run(t, c.newEngine(anthropictest.ScenarioBash, engine.Config{}), engine.Turn{Prompt: "Run echo hi."})

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
	if call == nil || result == nil || realCount(events, parser.ToolCall) != 1 || realCount(events, parser.ToolResult) != 1 {
		t.Fatalf("want one tool_call and one tool_result; events: %s", realDump(events))
	}
	var args struct{ Command string }
	if err := json.Unmarshal(call.Args, &args); err != nil || call.Name != "Bash" || args.Command != "echo hi" || call.ID != "toolu_bash_1" {
		t.Errorf("tool_call %s %s %s (%v), want Bash toolu_bash_1 {command: echo hi}", call.Name, call.ID, call.Args, err)
	}
	if result.ID != call.ID || result.IsError || strings.TrimSpace(result.Content) != "hi" {
		t.Errorf("tool_result %+v, want the output of the command the CLI really ran", *result)
	}
	if got := textOf(events); got != anthropictest.BashAnswer {
		t.Errorf("answer %q, want %q", got, anthropictest.BashAnswer)
	}
	if d := realDone(t, events); *d.Stats.NumTurns != 2 {
		t.Errorf("num_turns %d, want 2", *d.Stats.NumTurns)
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
	events := c.run(t, c.newEngine(anthropictest.ScenarioTools, engine.Config{}),
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
		t.Errorf("tools called %v, want Bash, Write, Read, Read; events: %s", names, realDump(events))
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
	if got := textOf(events); !strings.HasPrefix(got, "Let me run a command") || !strings.HasSuffix(got, anthropictest.ToolsAnswer) {
		t.Errorf("answer %q, want the first message's text and then %q", got, anthropictest.ToolsAnswer)
	}
	realDone(t, events)
	note, err := os.ReadFile(filepath.Join(c.workdir, anthropictest.ToolsNoteFile))
	if err != nil || string(note) != anthropictest.ToolsNote {
		t.Errorf("the Write tool left %q (%v) in the workdir, want %q", note, err, anthropictest.ToolsNote)
	}
}

func TestClaudeRealOverloaded(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events := c.run(t, c.newEngine(anthropictest.ScenarioOverloaded, engine.Config{}), engine.Turn{Prompt: "Say hello."})

	last := events[len(events)-1]
	if last.Type != parser.Error || !strings.Contains(last.Message, "529") || !strings.Contains(last.Message, "Overloaded") {
		t.Errorf("the run ended with %s %q, want an error naming 529 Overloaded", last.Type, last.Message)
	}
	if n := realCount(events, parser.Error); n != 1 {
		t.Errorf("%d error events, want exactly one", n)
	}
	// The CLI also prints the error as a synthetic assistant message; it
	// must not reach the user as answer text besides the error.
	if got := textOf(events); got != "" {
		t.Errorf("answer text %q on an API error, want none", got)
	}
	// Each retry is a warning the user sees (and none resets the session).
	for _, ev := range events {
		if ev.Type == parser.Warning && (ev.SessionReset || !strings.Contains(ev.Message, "retrying")) {
			t.Errorf("unexpected warning %+v; events: %s", ev, realDump(events))
		}
	}
	if n := realCount(events, parser.Warning); n != 2 {
		t.Errorf("%d warnings, want one per retry (2); events: %s", n, realDump(events))
	}
	// CLAUDE_CODE_MAX_RETRIES=2: the first call and two retries.
	if n := len(c.srv.MessageRequests(anthropictest.ScenarioOverloaded)); n != 3 {
		t.Errorf("the CLI made %d model calls, want 3", n)
	}
}

func TestClaudeRealResume(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	e := c.newEngine(anthropictest.ScenarioText, engine.Config{})
	first := realDone(t, c.run(t, e, engine.Turn{Prompt: "My name is Ada."}))

	events := c.run(t, e, engine.Turn{Prompt: "What is my name?", SessionID: first.SessionID})
	if n := realCount(events, parser.Warning); n != 0 {
		t.Fatalf("resuming an existing session warned; events: %s", realDump(events))
	}
	if d := realDone(t, events); d.SessionID != first.SessionID {
		t.Errorf("the resumed run ended with session %s, want the same session %s", d.SessionID, first.SessionID)
	}
	if got := textOf(events); got != anthropictest.TextAnswer {
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
	events := c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{}),
		engine.Turn{Prompt: "Say hello.", SessionID: unknown})

	if events[0].Type != parser.Warning || !events[0].SessionReset {
		t.Fatalf("the first event is %s (session reset %v), want a warning that resets the session; events: %s",
			events[0].Type, events[0].SessionReset, realDump(events))
	}
	if realCount(events, parser.Warning) != 1 || realCount(events, parser.Error) != 0 {
		t.Errorf("want exactly one warning and no error; events: %s", realDump(events))
	}
	d := realDone(t, events)
	if d.SessionID == unknown {
		t.Errorf("done keeps the unknown session id %s, want the new session's", unknown)
	}
	if got := textOf(events); got != anthropictest.TextAnswer {
		t.Errorf("answer %q after the fallback, want %q", got, anthropictest.TextAnswer)
	}
	// The unknown id never reached the model; the retry made one call.
	if n := len(c.srv.MessageRequests(anthropictest.ScenarioText)); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}

func TestClaudeRealSkills(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	skills := t.TempDir()
	skill := filepath.Join(skills, "team-greeting")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	const description = "Greets the golem team with the house greeting."
	md := "---\nname: team-greeting\ndescription: " + description + "\n---\n\nSay \"Hello, golem team!\"\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	events := c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{SkillsDir: skills}), engine.Turn{Prompt: "Greet the team."})
	realDone(t, events)

	// The CLI found the linked skill and offered it to the model.
	reqs := c.srv.MessageRequests(anthropictest.ScenarioText)
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	if body := string(reqs[0].Body); !strings.Contains(body, "team-greeting") || !strings.Contains(body, description) {
		t.Errorf("the model call does not offer the injected skill team-greeting (%q)", description)
	}
}

func TestClaudeRealStop(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	// The model runs a command whose child would outlive a careless kill.
	c.srv.Handle("sleep", func(r *anthropictest.Request) anthropictest.Reply {
		if r.Step() == 0 {
			return anthropictest.Reply{Blocks: []anthropictest.Block{anthropictest.ToolUse("toolu_sleep", "Bash",
				map[string]string{"command": "sleep 300 & echo $! > sleep.pid; wait", "description": "Sleep"})}}
		}
		return anthropictest.Text("slept")
	})
	ctx, cancel := context.WithTimeout(context.Background(), realRunTimeout)
	defer cancel()
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()
	r, err := c.newEngine("sleep", engine.Config{}).Run(stop, engine.Turn{Prompt: "Sleep.", Workdir: c.workdir, Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(c.workdir, "sleep.pid")
	var events []parser.Event
	pid := 0
	for ev := range r.Events() {
		events = append(events, ev)
		if ev.Type == parser.ToolCall && pid == 0 {
			pid = realWaitPID(t, ctx, pidFile)
			t.Cleanup(func() { _ = realKill(pid) })
			stopNow()
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the stopped run did not end within %s", realRunTimeout)
	}
	if pid == 0 {
		t.Fatalf("the run ended before the tool ran; events: %s", realDump(events))
	}
	last := events[len(events)-1]
	if last.Type != parser.Error || last.Message != "stopped" {
		t.Errorf("the run ended with %s %q, want the error \"stopped\"; events: %s", last.Type, last.Message, realDump(events))
	}
	// The engine gives the group two seconds between SIGTERM and SIGKILL.
	gone, cancelGone := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelGone()
	if !realWaitGone(gone, pid) {
		t.Errorf("the Bash tool's child (pid %d) survived the stop. Claude Code runs each tool command "+
			"in a session of its own (setsid), so signals to the CLI's process group miss it; SIGINT "+
			"to the CLI makes it end its tools' processes before it exits", pid)
	}
}

// realWaitPID polls for a pid file the agent's command writes.
func realWaitPID(t *testing.T, ctx context.Context, path string) int {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the command never wrote %s", path)
		case <-tick.C:
		}
	}
}

// realWaitGone polls until pid has exited (or is a zombie nobody reaped yet).
func realWaitGone(ctx context.Context, pid int) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// realKill ends the test's own sleep if it is still that process.
func realKill(pid int) error {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.HasPrefix(cmdline, []byte("sleep\x00300")) {
		return nil
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}
