package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// The fake agent speaks Claude Code's approval protocol (see enginetest):
// these tests check the engine's side of it without Node.
func TestFakeApprovals(t *testing.T) {
	t.Parallel()
	const two = "!ask Write {\"file_path\":\"a.txt\"}\n!ask Edit {\"file_path\":\"a.txt\"}\nok"
	tests := []struct {
		name     string
		prompt   string
		mode     engine.Mode
		answer   engine.PermissionAnswer
		asked    int    // permission requests seen
		firstHas string // the first tool result contains
		firstErr bool
	}{
		{"allow", two, engine.ModeAsk, engine.PermissionAnswer{Decision: engine.Allow}, 2, "fake output of Write", false},
		{"deny", two, engine.ModeAsk, engine.PermissionAnswer{Decision: engine.Deny, Message: "no thanks"}, 2, "denied: no thanks", true},
		{"deny default message", two, engine.ModeAsk, engine.PermissionAnswer{Decision: engine.Deny}, 2, "denied: The user denied this.", true},
		{"allow for the session", two, engine.ModeAsk, engine.PermissionAnswer{Decision: engine.AllowSession}, 1, "fake output of Write", false},
		{"answers", "!ask AskUserQuestion {\"questions\":[{\"question\":\"Q?\",\"options\":[{\"label\":\"A\"}]}]}",
			engine.ModeAsk, engine.PermissionAnswer{Decision: engine.Allow, Answers: map[string]string{"Q?": "A"}},
			1, `answers: {"Q?":"A"}`, false},
		{"accept edits asks nothing for edits", two, engine.ModeAcceptEdits, engine.PermissionAnswer{Decision: engine.Deny}, 0, "fake output of Write", false},
		{"bypass asks nothing", two, engine.ModeBypass, engine.PermissionAnswer{Decision: engine.Deny}, 0, "fake output of Write", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := fake(t, "claude-code", engine.Config{})
			r, err := e.Run(context.Background(), engine.Turn{Prompt: tc.prompt, Workdir: t.TempDir(), Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			var events []parser.Event
			asked := 0
			for ev := range r.Events() {
				events = append(events, ev)
				if ev.Type == parser.PermissionRequest {
					asked++
					if ev.Name == parser.AskUserQuestion && (len(ev.Questions()) != 1 || ev.Questions()[0].Options[0].Label != "A") {
						t.Errorf("questions %+v", ev.Questions())
					}
					a := tc.answer
					a.ID = ev.ID
					if err := r.Respond(context.Background(), a); err != nil {
						t.Errorf("respond: %v", err)
					}
				}
			}
			if end := lastEvent(events); end.Type != parser.Done {
				t.Fatalf("terminal %+v", end)
			}
			if asked != tc.asked {
				t.Errorf("%d requests, want %d", asked, tc.asked)
			}
			for _, ev := range events {
				if ev.Type == parser.ToolResult {
					if !strings.Contains(ev.Content, tc.firstHas) || ev.IsError != tc.firstErr {
						t.Errorf("first result %+v, want %q (error %v)", ev, tc.firstHas, tc.firstErr)
					}
					break
				}
			}
			if err := r.Respond(context.Background(), engine.PermissionAnswer{ID: "req-001", Decision: engine.Allow}); !errors.Is(err, engine.ErrNotPending) {
				t.Errorf("an answer after the run: %v, want ErrNotPending", err)
			}
		})
	}
}

// A run whose requests nobody answers is stopped like any other, and an
// unknown id is refused while it waits.
func TestFakeApprovalStop(t *testing.T) {
	t.Parallel()
	e, _ := fake(t, "claude-code", engine.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := e.Run(ctx, engine.Turn{Prompt: "!ask Bash {\"command\":\"rm -rf x\"}", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var end parser.Event
	for ev := range r.Events() {
		if ev.Type == parser.PermissionRequest {
			if err := r.Respond(ctx, engine.PermissionAnswer{ID: "nope", Decision: engine.Allow}); !errors.Is(err, engine.ErrNotPending) {
				t.Errorf("an unknown id: %v, want ErrNotPending", err)
			}
			cancel()
		}
		end = ev
	}
	if end.Type != parser.Error || end.Reason != parser.Stopped {
		t.Errorf("terminal %+v, want stopped", end)
	}
}

func TestModes(t *testing.T) {
	claude, _ := engine.Find("claude-code")
	cursor, _ := engine.Find("cursor")
	for _, m := range engine.Modes {
		if !claude.Honours(m) {
			t.Errorf("claude-code does not honour %s", m)
		}
	}
	if !cursor.Honours(engine.ModeBypass) || cursor.Honours(engine.ModeAsk) || cursor.Honours("") {
		t.Errorf("cursor honours %v, want bypass alone", cursor.HonouredModes())
	}
	err := cursor.CheckMode(engine.ModeAsk)
	if !errors.Is(err, engine.ErrMode) || !strings.Contains(err.Error(), "cursor") || !strings.Contains(err.Error(), `"ask"`) {
		t.Errorf("CheckMode = %v", err)
	}
	if _, err := engine.NewCursor(engine.Config{Command: enginetest.BuildCursor(t)}).Run(context.Background(),
		engine.Turn{Prompt: "hi", Workdir: t.TempDir(), Mode: engine.ModePlan}); !errors.Is(err, engine.ErrMode) {
		t.Errorf("cursor in plan mode: %v, want ErrMode", err)
	}
	if m, err := engine.ParseMode(""); m != engine.ModeAsk || err != nil {
		t.Errorf("ParseMode(\"\") = %q, %v", m, err)
	}
	if _, err := engine.ParseMode("yolo"); err == nil {
		t.Error("ParseMode(yolo) is not an error")
	}
}
