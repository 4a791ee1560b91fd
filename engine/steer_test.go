package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// steerRun runs prompt on the fake agent as Claude Code, steering each of
// steers in once the run's first text arrived, and returns all its events.
func steerRun(t *testing.T, cfg engine.Config, prompt string, steers ...string) []parser.Event {
	t.Helper()
	e, _ := fake(t, "claude-code", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.Run(ctx, engine.Turn{Prompt: prompt, Workdir: t.TempDir(), Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
		if ev.Type == parser.Text && len(steers) > 0 {
			for _, s := range steers {
				if err := r.Steer(s, nil); err != nil {
					t.Errorf("steer %q: %v", s, err)
				}
			}
			steers = nil
		}
	}
	checkOneTerminal(t, events)
	return events
}

func checkOneTerminal(t *testing.T, events []parser.Event) {
	t.Helper()
	for i, ev := range events {
		if ev.Terminal() != (i == len(events)-1) {
			t.Fatalf("event %d of %d (%s) terminal=%v: %+v", i, len(events), ev.Type, ev.Terminal(), events)
		}
		if ev.Type == parser.UserMessage {
			t.Errorf("the run passed on a %s event", ev.Type)
		}
	}
}

func texts(events []parser.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Type == parser.Text {
			out = append(out, ev.Content)
		}
	}
	return out
}

// A message steered in while more steps follow is part of the same turn:
// the agent hears it before its next step, and one result ends the run.
func TestSteerMidTurn(t *testing.T) {
	t.Parallel()
	events := steerRun(t, engine.Config{}, "!text 10\n!await\nfinal", "also this")
	got := strings.Join(texts(events), "")
	if !strings.HasSuffix(got, "heard: also thisecho: final") {
		t.Errorf("texts %q, want the steered message heard before the last step", got)
	}
	last := events[len(events)-1]
	if last.Type != parser.Done || last.Stats == nil || last.Stats.NumTurns == nil || *last.Stats.NumTurns != 1 {
		t.Errorf("the run ended with %+v, want the one turn's done", last)
	}
}

// A message that comes in too late for the turn under way (here: during
// its last step) gets a turn of its own: the run does not end at the first
// result line but at the second, whose done sums both turns.
func TestSteerNextTurn(t *testing.T) {
	t.Parallel()
	e, _ := fake(t, "claude-code", engine.Config{})
	r, err := e.Run(context.Background(), engine.Turn{Prompt: "!await", Workdir: t.TempDir(), Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Steer("second message", nil); err != nil {
		t.Fatalf("steer: %v", err)
	}
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	checkOneTerminal(t, events)
	if got := strings.Join(texts(events), ""); got != "echo: second message" {
		t.Errorf("texts %q, want the steered message answered in a turn of its own", got)
	}
	last := events[len(events)-1]
	if last.Type != parser.Done || last.Stats == nil || last.Stats.NumTurns == nil || *last.Stats.NumTurns != 2 {
		t.Fatalf("the run ended with %+v, want a done of two turns", last)
	}
	if st := last.Stats; st.InputTokens == nil || *st.InputTokens != 20 || st.OutputTokens == nil || *st.OutputTokens != 40 {
		t.Errorf("tokens %v in, %v out; want both turns' 10 in and 20 out summed", st.InputTokens, st.OutputTokens)
	}
}

// A steer right after the start waits for the prompt: the agent gets the
// prompt first.
func TestSteerBeforeThePromptIsWritten(t *testing.T) {
	t.Parallel()
	e, log := fake(t, "claude-code", engine.Config{})
	r, err := e.Run(context.Background(), engine.Turn{Prompt: "!await\nfinal", Workdir: t.TempDir(), Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Steer("early", nil); err != nil {
		t.Fatalf("steer: %v", err)
	}
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	checkOneTerminal(t, events)
	if got := strings.Join(texts(events), ""); got != "heard: earlyecho: final" {
		t.Errorf("texts %q, want the early message heard after the prompt", got)
	}
	if inv := enginetest.ReadLog(t, log); len(inv) != 1 || inv[0].Prompt != "!await\nfinal" {
		t.Errorf("invocations %+v, want one with the prompt", inv)
	}
}

// Once the run's last result line is parsed, or the run was stopped, or
// for an engine that takes no input, Steer fails with ErrNotSteerable.
func TestSteerRefused(t *testing.T) {
	t.Parallel()
	t.Run("after the end", func(t *testing.T) {
		t.Parallel()
		e, _ := fake(t, "claude-code", engine.Config{})
		r, err := e.Run(context.Background(), engine.Turn{Prompt: "hi", Workdir: t.TempDir(), Mode: engine.ModeBypass})
		if err != nil {
			t.Fatal(err)
		}
		r.Next()
		for batch := r.Next(); batch != nil; batch = r.Next() {
		}
		if err := r.Steer("too late", nil); !errors.Is(err, engine.ErrNotSteerable) {
			t.Errorf("steer after the result: %v, want ErrNotSteerable", err)
		}
		<-r.Exited()
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		e, _ := fake(t, "claude-code", engine.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		r, err := e.Run(ctx, engine.Turn{Prompt: "!hang", Workdir: t.TempDir(), Mode: engine.ModeBypass})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := r.Steer("stop first", nil); !errors.Is(err, engine.ErrNotSteerable) {
			t.Errorf("steer after a stop: %v, want ErrNotSteerable", err)
		}
		for range r.Events() {
		}
	})
	t.Run("cursor", func(t *testing.T) {
		t.Parallel()
		e, _ := fake(t, "cursor", engine.Config{})
		r, err := e.Run(context.Background(), engine.Turn{Prompt: "!sleep 50ms\nhi", Workdir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Steer("no", nil); !errors.Is(err, engine.ErrNotSteerable) {
			t.Errorf("steer into cursor: %v, want ErrNotSteerable", err)
		}
		for range r.Events() {
		}
	})
}

// A CLI that does not echo what it takes in leaves every result line
// looking like one that more messages follow: its stdin is closed after
// steerGrace and the run ends with its last result, not a hang.
func TestSteerWithoutReplayEnds(t *testing.T) {
	defer engine.SetSteerGrace(50 * time.Millisecond)()
	events := steerRun(t, engine.Config{Env: map[string]string{"FAKE_AGENT_NO_REPLAY": "1"}}, "hi")
	if last := events[len(events)-1]; last.Type != parser.Done {
		t.Errorf("the run ended with %+v, want done", last)
	}
}

// A stopped run ends with the session its CLI announced, so that the next
// turn can resume it.
func TestStoppedRunTellsItsSession(t *testing.T) {
	t.Parallel()
	e, log := fake(t, "claude-code", engine.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := e.Run(ctx, engine.Turn{Prompt: "!text 10\n!hang", Workdir: t.TempDir(), Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	var last parser.Event
	for ev := range r.Events() {
		if ev.Type == parser.Text {
			cancel()
		}
		last = ev
	}
	inv := enginetest.ReadLog(t, log)
	if last.Reason != parser.Stopped || len(inv) != 1 || last.SessionID != inv[0].SessionID {
		t.Errorf("the stopped run ended with %+v; want stopped in session %+v", last, inv)
	}
}

// A CLI that crashes in the turn of a steered message ends the run with
// the crash, not with the done of the turn before: the steered message's
// answer is cut short, and the chat is told.
func TestSteeredTurnCrashEndsTheRun(t *testing.T) {
	t.Parallel()
	e, _ := fake(t, "claude-code", engine.Config{})
	r, err := e.Run(context.Background(), engine.Turn{Prompt: "!await", Workdir: t.TempDir(), Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Steer("!text 10\n!crash 3", nil); err != nil {
		t.Fatalf("steer: %v", err)
	}
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	checkOneTerminal(t, events)
	if last := events[len(events)-1]; last.Type != parser.Error || last.Reason != parser.Crashed {
		t.Errorf("the run ended with %+v, want the crash", last)
	}
}
