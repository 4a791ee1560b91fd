package parser

import "testing"

// scripted is a Parser that returns fixed events per line index, to drive
// the Guard through the cases real parsers rarely produce (two terminal
// events in one line).
type scripted [][]Event

func (s *scripted) Parse([]byte) []Event {
	if len(*s) == 0 {
		return nil
	}
	e := (*s)[0]
	*s = (*s)[1:]
	return e
}

func TestGuard(t *testing.T) {
	text := Event{Type: Text, Content: "t"}
	done := Event{Type: Done, SessionID: "s"}
	fail := Event{Type: Error, Message: "e"}
	cases := []struct {
		name   string
		lines  [][]Event
		reason string
		want   []Event
	}{
		{"done ends the run", [][]Event{{text}, {done}, {text}}, "", []Event{text, done}},
		{"events after the terminal one in the same line are dropped", [][]Event{{text, fail, text, done}}, "", []Event{text, fail}},
		{"no terminal event: Finish adds the error", [][]Event{{text}, nil}, "exit status 1",
			[]Event{text, {Type: Error, Message: "the agent ended without a result: exit status 1", Reason: Crashed}}},
		{"no reason", nil, "", []Event{{Type: Error, Message: "the agent ended without a result", Reason: Crashed}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scripted(c.lines)
			g := NewGuard(&s)
			var got []Event
			for range len(c.lines) + 1 {
				got = append(got, g.Parse(nil)...)
			}
			if e, ok := g.Finish(c.reason); ok {
				got = append(got, e)
			}
			if !g.Ended() {
				t.Error("Ended is false after Finish")
			}
			if _, ok := g.Finish("again"); ok {
				t.Error("a second Finish returned an event")
			}
			if _, ok := g.Abort(Stopped, "stopped"); ok {
				t.Error("Abort after the end returned an event")
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i].Type != c.want[i].Type || got[i].Message != c.want[i].Message || got[i].Content != c.want[i].Content ||
					got[i].Reason != c.want[i].Reason {
					t.Errorf("event %d: got %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestGuardAbort(t *testing.T) {
	g := NewGuard(NewClaudeCode())
	g.Parse([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}`))
	e, ok := g.Abort(Stopped, "stopped")
	if !ok || e.Type != Error || e.Message != "stopped" || e.Reason != Stopped {
		t.Fatalf("Abort = %+v, %v; want the error \"stopped\"", e, ok)
	}
	if ev := g.Parse([]byte(`{"type":"result","is_error":false}`)); ev != nil {
		t.Errorf("Parse after Abort returned %+v", ev)
	}
}

// TestGuardContinue: a result line the engine does not take as the run's
// end (more steered messages follow) lets the next turn's events through.
func TestGuardContinue(t *testing.T) {
	g := NewGuard(NewClaudeCode())
	first := g.Parse([]byte(`{"type":"result","subtype":"success","is_error":false,"session_id":"s"}`))
	if len(first) != 1 || first[0].Type != Done || !g.Ended() {
		t.Fatalf("first result: %+v, ended %v", first, g.Ended())
	}
	g.Continue()
	// A parser reuses the slice it returns: keep copies.
	evs := append([]Event(nil), g.Parse([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"again"}]}}`))...)
	evs = append(evs, g.Parse([]byte(`{"type":"result","subtype":"success","is_error":false,"session_id":"s"}`))...)
	if len(evs) != 2 || evs[0].Content != "again" || evs[1].Type != Done {
		t.Fatalf("after Continue: %+v, want the text and a second done", evs)
	}
	if evs := g.Parse([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"late"}]}}`)); evs != nil {
		t.Errorf("without Continue the second result ended the run, yet %+v came through", evs)
	}
}

// TestReasonNotMessage: a CLI whose own error message is "stopped" failed;
// it was not stopped, and the JSON says so by having no reason.
func TestReasonNotMessage(t *testing.T) {
	g := NewGuard(NewClaudeCode())
	evs := g.Parse([]byte(`{"type":"result","subtype":"success","is_error":true,"result":"stopped"}`))
	if len(evs) != 1 || evs[0].Type != Error || evs[0].Message != "stopped" || evs[0].Reason != Failed {
		t.Fatalf("events = %+v, want the CLI's own error \"stopped\"", evs)
	}
	cases := []struct {
		ev   Event
		want string
	}{
		{evs[0], `{"type":"error","message":"stopped"}`},
		{Event{Type: Error, Message: "stopped", Reason: Stopped}, `{"type":"error","message":"stopped","reason":"stopped"}`},
		{Event{Type: Error, Message: "timed out", Reason: TimedOut}, `{"type":"error","message":"timed out","reason":"timed_out"}`},
		{Event{Type: Error, Message: "x", Reason: Crashed}, `{"type":"error","message":"x","reason":"crashed"}`},
		{Event{Type: Error, Message: "x", Reason: Interrupted}, `{"type":"error","message":"x","reason":"interrupted"}`},
	}
	for _, c := range cases {
		if b, _ := c.ev.MarshalJSON(); string(b) != c.want {
			t.Errorf("%+v marshals as %s, want %s", c.ev, b, c.want)
		}
	}
	for r, want := range map[Reason]string{Failed: "error", Crashed: "crashed", Stopped: "stopped", TimedOut: "timed_out", Interrupted: "interrupted"} {
		if r.String() != want {
			t.Errorf("%q.String() = %q, want %q", string(r), r.String(), want)
		}
	}
}
