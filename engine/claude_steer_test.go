package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/parser"
)

// These tests steer the real Claude Code CLI: a user message written on
// its stdin while a model request of the turn is in flight (the fake
// Messages API holds its answer until the test has steered).

const steerText = "STEER-MARKER: also say bye"

// mentions reports whether any message of the request carries the steered
// text.
func mentions(r *anthropictest.Request) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text(), "STEER-MARKER") {
			return true
		}
	}
	return false
}

// heldScenario answers the model calls of a turn: first (held until
// release is closed) with first, and once a request carries the steered
// message with "Saw the steer."; otherwise with after.
func heldScenario(srv *anthropictest.Server, name string, first, after anthropictest.Reply) (held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	srv.Handle(name, func(r *anthropictest.Request) anthropictest.Reply {
		if mentions(r) {
			return anthropictest.Text("Saw the steer.")
		}
		if calls.Add(1) == 1 {
			close(held)
			<-release
			return first
		}
		return after
	})
	return held, release
}

func steerReal(t *testing.T, c *realClaude, scenario string, held, release chan struct{}) []parser.Event {
	t.Helper()
	ctx := realCtx(t)
	r, err := c.newEngine(scenario, engine.Config{}).Run(ctx, engine.Turn{Prompt: "Go.", Workdir: c.workdir, Mode: engine.ModeBypass})
	if err != nil {
		t.Fatalf("start run: %v", err)
	}
	go func() {
		select {
		case <-held:
		case <-ctx.Done():
			return
		}
		if err := r.Steer(steerText, nil); err != nil {
			t.Errorf("steer: %v", err)
		}
		close(release)
	}()
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	checkOneTerminal(t, events)
	return events
}

// Steered while the turn's first model call runs (a tool use follows), the
// message is in the turn's next model request, and the turn's one result
// ends the run with the answer to it.
func TestClaudeRealSteerMidTurn(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	held, release := heldScenario(c.srv, "steer",
		anthropictest.Reply{Blocks: []anthropictest.Block{anthropictest.ToolUse("toolu_steer", "Bash",
			map[string]string{"command": "echo hi", "description": "Print hi"})}},
		anthropictest.Text("Not steered."))
	events := steerReal(t, c, "steer", held, release)
	realDone(t, events)
	reqs := c.srv.MessageRequests("steer")
	if len(reqs) < 2 {
		t.Fatalf("%d model requests, want 2 or more; events: %s", len(reqs), realDump(events))
	}
	if mentions(reqs[0]) || !mentions(reqs[1]) {
		t.Errorf("the steered message is not in the model request after it (first %v, next %v)", mentions(reqs[0]), mentions(reqs[1]))
	}
	if len(reqs[1].ToolResults()) == 0 && reqs[1].Step() == 0 {
		t.Logf("the CLI took the message in as a turn of its own")
	}
	if got := textOf(events); !strings.HasSuffix(got, "Saw the steer.") {
		t.Errorf("answer %q, want it to end with the answer to the steered message", got)
	}
	if _, ok := resultOf(events, "toolu_steer"); !ok {
		t.Errorf("the turn's tool use has no result: %s", realDump(events))
	}
}

// Steered during the turn's last model call, the message gets a turn of
// its own (the CLI prints two result lines): the run ends at the second,
// with both answers, and its done counts both turns.
func TestClaudeRealSteerAfterLastStep(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	held, release := heldScenario(c.srv, "steer-last", anthropictest.Text("First answer."), anthropictest.Text("Not steered."))
	events := steerReal(t, c, "steer-last", held, release)
	done := realDone(t, events)
	got := textOf(events)
	if !strings.Contains(got, "First answer.") || !strings.HasSuffix(got, "Saw the steer.") {
		t.Errorf("answer %q, want the first answer, then the answer to the steered message", got)
	}
	reqs := c.srv.MessageRequests("steer-last")
	if len(reqs) < 2 || !mentions(reqs[len(reqs)-1]) || !strings.Contains(reqs[len(reqs)-1].LastUser().Text(), steerText) {
		t.Errorf("the last of %d model requests does not end with the steered message", len(reqs))
	}
	if done.Stats == nil || done.Stats.NumTurns == nil || *done.Stats.NumTurns < 2 {
		t.Errorf("done stats %+v, want both turns counted", done.Stats)
	}
}

// A run stopped mid-turn (busy: interrupt, /stop) ends "stopped" with the
// session the CLI announced, and resuming that session works: the next
// turn's model request has the stopped turn's prompt in it.
func TestClaudeRealStoppedRunKeepsItsSession(t *testing.T) {
	t.Parallel()
	c := newRealClaude(t)
	held, release := heldScenario(c.srv, "stopped", anthropictest.Text("Never seen."), anthropictest.Text("Resumed."))
	defer close(release)
	ctx, stop := context.WithCancel(realCtx(t))
	defer stop()
	e := c.newEngine("stopped", engine.Config{})
	r, err := e.Run(ctx, engine.Turn{Prompt: "FIRST-PROMPT", Workdir: c.workdir, Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-held
		stop()
	}()
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	last := events[len(events)-1]
	if last.Type != parser.Error || last.Reason != parser.Stopped || !realUUID.MatchString(last.SessionID) {
		t.Fatalf("the stopped run ended with %+v, want stopped with the session id; events: %s", last, realDump(events))
	}
	next := c.run(t, e, engine.Turn{Prompt: "SECOND-PROMPT", SessionID: last.SessionID})
	if done := realDone(t, next); done.SessionID != last.SessionID {
		t.Errorf("the resumed run's session is %q, want %q", done.SessionID, last.SessionID)
	}
	reqs := c.srv.MessageRequests("stopped")
	var all []string
	for _, m := range reqs[len(reqs)-1].Messages {
		all = append(all, m.Text())
	}
	if got := strings.Join(all, "\n"); !strings.Contains(got, "FIRST-PROMPT") || !strings.Contains(got, "SECOND-PROMPT") {
		t.Errorf("the resumed turn's model request does not hold both prompts: %q", got)
	}
}
