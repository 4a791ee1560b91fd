package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// nextAll reads the run with Next to its end and returns its batches.
func nextAll(t *testing.T, r *engine.Run) [][]parser.Event {
	t.Helper()
	var out [][]parser.Event
	for batch := r.Next(); batch != nil; batch = r.Next() {
		out = append(out, slices.Clone(batch)) // Next reuses the batch's memory
	}
	var flat []parser.Event
	for _, b := range out {
		flat = append(flat, b...)
	}
	checkTerminal(t, flat)
	return out
}

// TestResultBeforeExit: the CLI's result is delivered while the CLI still
// runs after it (the fake lingers, as Claude Code does while it writes its
// session file); a CLI that does not exit is stopped after a grace, its
// answer already delivered, and Exited says when it is gone.
func TestResultBeforeExit(t *testing.T) {
	for _, tc := range []struct{ name, engine, prompt string }{
		{"claude", "claude-code", "!text 30\n!linger 1h"},
		{"cursor", "cursor", "!text 30\n!linger 1h"},
		{"ignores SIGTERM", "claude-code", "!ignore-term\n!text 30\n!linger 1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, logPath := fake(t, tc.engine, engine.Config{})
			r, err := e.Run(context.Background(), engine.Turn{Prompt: tc.prompt, Workdir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var events []parser.Event
			for batch := r.Next(); batch != nil; batch = r.Next() {
				events = append(events, batch...)
			}
			checkTerminal(t, events)
			inv := waitInvocation(t, logPath)
			if !alive(inv.PID) {
				t.Fatal("the agent had exited when its result arrived; want it delivered while the agent lingers")
			}
			select {
			case <-r.Exited():
				t.Fatal("Exited while the agent runs")
			default:
			}
			if end := lastEvent(events); end.Type != parser.Done || textOf(events) != "the quick brown fox jumps over" {
				t.Errorf("events %+v, want the text and done", events)
			}
			select {
			case <-r.Exited():
			case <-time.After(30 * time.Second):
				t.Fatal("a lingering agent was never stopped")
			}
			if alive(inv.PID) {
				t.Errorf("the agent (pid %d) runs after Exited", inv.PID)
			}
		})
	}
}

// TestResumeFailureWaitsForItsProcess: the error of a resume that failed is
// not delivered (the run retries without the session), so the one terminal
// event is the retry's.
func TestResumeFailureWaitsForItsProcess(t *testing.T) {
	e, logPath := fake(t, "claude-code", engine.Config{})
	r, err := e.Run(context.Background(), engine.Turn{Prompt: "hello", SessionID: "unknown-1", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var events []parser.Event
	for _, b := range nextAll(t, r) {
		events = append(events, b...)
	}
	if events[0].Type != parser.Warning || !events[0].SessionReset || lastEvent(events).Type != parser.Done {
		t.Errorf("events %+v, want the reset warning first and done last", events)
	}
	if n := len(enginetest.ReadLog(t, logPath)); n != 2 {
		t.Errorf("%d invocations, want the failed resume and the retry", n)
	}
}

// TestNextBatches: lines the CLI writes in one go come out of Next
// together, not one wake-up each.
func TestNextBatches(t *testing.T) {
	e, _ := fake(t, "claude-code", engine.Config{})
	r, err := e.Run(context.Background(), engine.Turn{Prompt: "!text 4000", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	batches := nextAll(t, r)
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	if n < 200 || len(batches) > n/4 {
		t.Errorf("%d events in %d batches; want 200 deltas and more in far fewer batches", n, len(batches))
	}
	<-r.Exited()
}
