package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// slowEdits is a recorder whose edits wait until release is closed.
type slowEdits struct {
	*recorder
	entered chan struct{} // receives when an edit starts waiting
	release chan struct{}
}

func (s *slowEdits) Edit(ctx context.Context, ref core.MessageRef, text string) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.recorder.Edit(ctx, ref, text)
}

// TestSlowEditsBuildNoBacklog: text that arrives while an edit is in
// flight is coalesced into one edit carrying the newest text, and the
// final text is exact.
func TestSlowEditsBuildNoBacklog(t *testing.T) {
	a := &slowEdits{
		recorder: newRecorder(t, core.Limits{MaxLen: 4000}),
		entered:  make(chan struct{}, 1),
		release:  make(chan struct{}),
	}
	r := core.NewReply(context.Background(), a, core.Place{Channel: "C1"}, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "a"})
	a.recorder.waitText("a") // posted at once
	r.Add(parser.Event{Type: parser.Text, Content: "b"})
	select {
	case <-a.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no edit started")
	}
	want := "ab"
	for range 100 {
		r.Add(parser.Event{Type: parser.Text, Content: "c"})
		want += "c"
	}
	close(a.release)
	r.Finish("")
	if got := a.texts(); len(got) != 1 || got[0] != want {
		t.Errorf("messages = %q, want one with %q", got, want)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.edits > 2 {
		t.Errorf("%d edits for text that came during one slow edit, want at most 2 (no backlog)", a.edits)
	}
}

func TestNoticeAfterAnOpenCodeBlockIsNotCode(t *testing.T) {
	rec := newRecorder(t, core.Limits{MaxLen: 4000})
	r := core.NewReply(context.Background(), rec, core.Place{Channel: "C1"}, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "Here:\n\n```go\nx := 1\n"})
	r.Finish(core.Notice(parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}, time.Minute))
	want := "Here:\n\n```go\nx := 1\n```\n\n⏹️ _Stopped._"
	if got := rec.texts(); len(got) != 1 || got[0] != want {
		t.Errorf("messages = %q, want %q", got, want)
	}
}

// TestNotice: the notice follows the terminal event's reason, never its
// text.
func TestNotice(t *testing.T) {
	cases := []struct {
		ev   parser.Event
		want string
	}{
		{parser.Event{Type: parser.Done}, ""},
		{parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}, "⏹️ _Stopped._"},
		{parser.Event{Type: parser.Error, Message: "timed out", Reason: parser.TimedOut}, "⏱️ _Timed out after 1m0s; the agent was stopped._"},
		{parser.Event{Type: parser.Error, Message: "the agent ended without a result: exit code 3", Reason: parser.Crashed},
			"⚠️ **Error:** the agent ended without a result: exit code 3"},
		{parser.Event{Type: parser.Error, Message: "golem is shutting down", Reason: parser.Interrupted}, "golem is shutting down"},
		// The CLI's own errors, worded like golem's outcomes.
		{parser.Event{Type: parser.Error, Message: "stopped"}, "⚠️ **Error:** stopped"},
		{parser.Event{Type: parser.Error, Message: "timed out"}, "⚠️ **Error:** timed out"},
	}
	for _, c := range cases {
		if got := core.Notice(c.ev, time.Minute); got != c.want {
			t.Errorf("Notice(%+v) = %q, want %q", c.ev, got, c.want)
		}
	}
}
