package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/parser"
)

// These tests run the real Claude Code CLI in the modes that ask
// (--permission-prompt-tool stdio) against the fake Messages API's approval
// scenarios, answering its permission requests through Run.Respond.

// answerer decides the answer to one permission request; nil answers
// nothing (the request waits).
type answerer func(ev parser.Event) *engine.PermissionAnswer

// runAsking runs one turn, answering each permission request as answer
// says, and returns the events and the requests seen.
func (c *realClaude) runAsking(t *testing.T, ctx context.Context, scenario string, mode engine.Mode, answer answerer) (events, asked []parser.Event) {
	t.Helper()
	r, err := c.newEngine(scenario, engine.Config{}).Run(ctx, engine.Turn{Prompt: "Go.", Workdir: c.workdir, Mode: mode})
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	for ev := range r.Events() {
		events = append(events, ev)
		if ev.Type != parser.PermissionRequest {
			continue
		}
		asked = append(asked, ev)
		if a := answer(ev); a != nil {
			a.ID = ev.ID
			if err := r.Respond(ctx, *a); err != nil {
				t.Errorf("respond to %s: %v", ev.Name, err)
			}
			if err := r.Respond(ctx, *a); !errors.Is(err, engine.ErrNotPending) {
				t.Errorf("a second answer to %s: %v, want ErrNotPending", ev.Name, err)
			}
		}
	}
	return events, asked
}

func toolNames(evs []parser.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name)
	}
	return out
}

func resultOf(events []parser.Event, toolUseID string) (parser.Event, bool) {
	for _, ev := range events {
		if ev.Type == parser.ToolResult && ev.ID == toolUseID {
			return ev, true
		}
	}
	return parser.Event{}, false
}

func realCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), realRunTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestClaudeRealAskAllow(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events, asked := c.runAsking(t, realCtx(t), anthropictest.ScenarioAsk, engine.ModeAsk,
		func(parser.Event) *engine.PermissionAnswer { return &engine.PermissionAnswer{Decision: engine.Allow} })
	realDone(t, events)
	if got := strings.Join(toolNames(asked), ","); got != "Write,Edit,Bash" {
		t.Errorf("asked for %s, want Write,Edit,Bash; events: %s", got, realDump(events))
	}
	if len(asked) > 0 && (len(asked[0].Suggestions()) == 0 || !strings.Contains(string(asked[0].Args), anthropictest.AskFile)) {
		t.Errorf("the Write request carries no suggestions or not its input: %+v", asked[0])
	}
	if b, err := os.ReadFile(filepath.Join(c.workdir, anthropictest.AskFile)); err != nil || string(b) != "two\n" {
		t.Errorf("the allowed Write and Edit left %q (%v), want \"two\\n\"", b, err)
	}
	if _, err := os.Stat(filepath.Join(c.workdir, anthropictest.AskBashFile)); err != nil {
		t.Errorf("the allowed Bash command did not run: %v", err)
	}
}

func TestClaudeRealAskDeny(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events, asked := c.runAsking(t, realCtx(t), anthropictest.ScenarioAsk, engine.ModeAsk,
		func(parser.Event) *engine.PermissionAnswer {
			return &engine.PermissionAnswer{Decision: engine.Deny, Message: "denied by Ada in the chat"}
		})
	realDone(t, events)
	if len(asked) == 0 || asked[0].Name != "Write" {
		t.Fatalf("asked for %v, want Write first; events: %s", toolNames(asked), realDump(events))
	}
	res, ok := resultOf(events, "toolu_ask_write")
	if !ok || !res.IsError || !strings.Contains(res.Content, "denied by Ada in the chat") {
		t.Errorf("the denied Write's result is %+v, want an error with the message", res)
	}
	if _, err := os.Stat(filepath.Join(c.workdir, anthropictest.AskFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the denied Write wrote its file (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(c.workdir, anthropictest.AskBashFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the denied Bash command ran (%v)", err)
	}
}

// Allowed for the session, the Write's suggestion (accept edits) applies:
// the Edit that follows, and the file command, are not asked.
func TestClaudeRealAskAllowSession(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events, asked := c.runAsking(t, realCtx(t), anthropictest.ScenarioAsk, engine.ModeAsk,
		func(parser.Event) *engine.PermissionAnswer {
			return &engine.PermissionAnswer{Decision: engine.AllowSession}
		})
	realDone(t, events)
	if got := strings.Join(toolNames(asked), ","); got != "Write" {
		t.Errorf("asked for %s, want only the Write; events: %s", got, realDump(events))
	}
	if b, err := os.ReadFile(filepath.Join(c.workdir, anthropictest.AskFile)); err != nil || string(b) != "two\n" {
		t.Errorf("the Write and Edit left %q (%v), want \"two\\n\"", b, err)
	}
	// Nothing is kept beyond the session in the workspace's settings.
	if _, err := os.Stat(filepath.Join(c.workdir, ".claude", "settings.local.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("allowing for the session wrote .claude/settings.local.json (%v)", err)
	}
}

// A request nobody answers holds the turn until its time runs out, which
// ends it as timed out, the CLI gone and nothing written.
func TestClaudeRealAskTimeout(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	ctx, expire := context.WithCancelCause(realCtx(t))
	defer expire(nil)
	events, asked := c.runAsking(t, ctx, anthropictest.ScenarioAsk, engine.ModeAsk,
		func(parser.Event) *engine.PermissionAnswer {
			expire(context.DeadlineExceeded) // as the turn's timeout does
			return nil
		})
	if len(asked) != 1 || asked[0].Name != "Write" {
		t.Errorf("asked for %v, want the Write alone", toolNames(asked))
	}
	if last := events[len(events)-1]; last.Type != parser.Error || last.Reason != parser.TimedOut {
		t.Errorf("the run ended with %+v, want it timed out", last)
	}
	if _, err := os.Stat(filepath.Join(c.workdir, anthropictest.AskFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unanswered Write wrote its file (%v)", err)
	}
}

func TestClaudeRealAskUserQuestion(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events, asked := c.runAsking(t, realCtx(t), anthropictest.ScenarioQuestion, engine.ModeAsk,
		func(ev parser.Event) *engine.PermissionAnswer {
			if len(ev.Questions()) != 1 || len(ev.Questions()[0].Options) != 2 || ev.Questions()[0].Options[1].Label != "Blue" {
				t.Errorf("the question arrived as %+v", ev.Questions())
				return &engine.PermissionAnswer{Decision: engine.Deny}
			}
			return &engine.PermissionAnswer{Decision: engine.Allow,
				Answers: map[string]string{ev.Questions()[0].Question: "Blue"}}
		})
	realDone(t, events)
	if len(asked) != 1 || asked[0].Name != parser.AskUserQuestion {
		t.Errorf("asked for %v, want AskUserQuestion", toolNames(asked))
	}
	if got := textOf(events); !strings.Contains(got, "You picked:") || !strings.Contains(got, `="Blue"`) {
		t.Errorf("answer %q does not carry the choice Blue", got)
	}
}

func TestClaudeRealPlanApproved(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events, asked := c.runAsking(t, realCtx(t), anthropictest.ScenarioPlan, engine.ModePlan,
		func(ev parser.Event) *engine.PermissionAnswer {
			return &engine.PermissionAnswer{Decision: engine.Allow}
		})
	realDone(t, events)
	if len(asked) == 0 || asked[0].Name != parser.ExitPlanMode || !strings.Contains(string(asked[0].Args), "Write plan.txt") {
		t.Fatalf("asked for %v, want ExitPlanMode with the plan first", toolNames(asked))
	}
	if got := textOf(events); !strings.Contains(got, anthropictest.PlanDone) {
		t.Errorf("answer %q, want %q", got, anthropictest.PlanDone)
	}
	if _, err := os.Stat(filepath.Join(c.workdir, anthropictest.PlanFile)); err != nil {
		t.Errorf("the approved plan's Write did not run: %v", err)
	}
}

func TestClaudeRealPlanKeepPlanning(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	events, asked := c.runAsking(t, realCtx(t), anthropictest.ScenarioPlan, engine.ModePlan,
		func(ev parser.Event) *engine.PermissionAnswer {
			return &engine.PermissionAnswer{Decision: engine.Deny, Message: "Keep planning."}
		})
	realDone(t, events)
	if len(asked) != 1 || asked[0].Name != parser.ExitPlanMode {
		t.Errorf("asked for %v, want ExitPlanMode alone", toolNames(asked))
	}
	if got := textOf(events); !strings.Contains(got, anthropictest.KeepPlanning) {
		t.Errorf("answer %q, want %q", got, anthropictest.KeepPlanning)
	}
}
