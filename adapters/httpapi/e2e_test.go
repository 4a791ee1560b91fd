package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
)

// serveDispatcher wires the HTTP adapter to a real dispatcher running the
// fake agent CLI as Claude Code, like `bot serve` does, and returns the
// base URL. Everything stops at the end of the test, in order.
func serveDispatcher(t *testing.T) string {
	t.Helper()
	return serveDispatcherWith(t, nil)
}

// serveDispatcherWith is serveDispatcher with a last say on the
// dispatcher's options.
func serveDispatcherWith(t *testing.T, tune func(*core.Options)) string {
	t.Helper()
	ln, base := listen(t) // before the bot: cleanups run last first, so the bot stops before ln closes
	b := bottest.New(t, bottest.Options{Trusted: []string{"http"}, Tune: tune})
	s, err := New(Options{Listener: ln, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(s)
	return base
}

// wireEvent is an event as the API sends it.
type wireEvent struct {
	Type      string          `json:"type"`
	Content   string          `json:"content"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Message   string          `json:"message"`
	Reason    string          `json:"reason"`
	SessionID string          `json:"session_id"`
	Size      int64           `json:"size"`
	URL       string          `json:"url"`
}

func chatEvents(t *testing.T, base, conversation, text string) []wireEvent {
	t.Helper()
	body, _ := json.Marshal(chatRequest{Conversation: conversation, Text: text})
	res := postChat(t, base, string(body))
	if res.StatusCode != 200 {
		t.Fatalf("POST %q: status %d", text, res.StatusCode)
	}
	return decodeEvents(t, newSSEReader(res.Body).readAll(t))
}

func decodeEvents(t *testing.T, payloads []string) []wireEvent {
	t.Helper()
	out := make([]wireEvent, len(payloads))
	for i, p := range payloads {
		if err := json.Unmarshal([]byte(p), &out[i]); err != nil {
			t.Fatalf("event %s: %v", p, err)
		}
	}
	if len(out) == 0 {
		t.Fatal("no events")
	}
	for i, e := range out {
		if terminal := e.Type == "done" || e.Type == "error"; terminal != (i == len(out)-1) {
			t.Fatalf("terminal event not exactly last: %+v", out)
		}
	}
	return out
}

func answerText(events []wireEvent) string {
	var b strings.Builder
	for _, e := range events {
		if e.Type == "text" {
			b.WriteString(e.Content)
		}
	}
	return b.String()
}

// TestEndToEnd: HTTP POST → real dispatcher → real fake-agent process →
// SSE events, with the session resumed by the next message.
func TestEndToEnd(t *testing.T) {
	base := serveDispatcher(t)

	first := chatEvents(t, base, "e2e", "hello there")
	if got := answerText(first); got != "echo: hello there" {
		t.Errorf("answer %q; events %+v", got, first)
	}
	last := first[len(first)-1]
	if last.Type != "done" || last.SessionID == "" {
		t.Fatalf("terminal event %+v", last)
	}

	second := chatEvents(t, base, "e2e", "!tool Bash {\"command\":\"ls -la\"}\nlisted")
	var tool *wireEvent
	for i := range second {
		if second[i].Type == "tool_call" {
			tool = &second[i]
		}
	}
	if tool == nil || tool.Name != "Bash" || !strings.Contains(string(tool.Args), "ls -la") {
		t.Errorf("no Bash tool call in %+v", second)
	}
	if got := answerText(second); !strings.Contains(got, "listed") {
		t.Errorf("answer %q", got)
	}
	if s := second[len(second)-1].SessionID; s != last.SessionID {
		t.Errorf("the second turn ran in session %q, want the first's %q (resume)", s, last.SessionID)
	}

	status := chatEvents(t, base, "e2e", "/status")
	if len(status) != 2 || status[0].Type != "text" || !strings.Contains(status[0].Content, "claude-code") || status[1].Type != "done" {
		t.Errorf("/status answered %+v", status)
	}
}

// TestEndToEndStopAndDisconnect: /stop from a second request ends a running
// turn's stream with "stopped"; a client that leaves mid-turn does not hold
// up the conversation's next message.
func TestEndToEndStopAndDisconnect(t *testing.T) {
	// The message after the slow turn waits for it (busy: queue; the
	// default would steer it into the turn whose client went away).
	base := serveDispatcherWith(t, func(o *core.Options) { o.Busy = core.BusyQueue })

	// A turn that writes a little and then hangs.
	body, _ := json.Marshal(chatRequest{Conversation: "stop", Text: "!text 30\n!hang"})
	res := postChat(t, base, string(body))
	sse := newSSEReader(res.Body)
	if first, err := sse.next(); err != nil || !strings.Contains(first, `"text"`) {
		t.Fatalf("first event %q, %v", first, err)
	}
	stop := chatEvents(t, base, "stop", "/stop")
	if stop[len(stop)-1].Type != "done" {
		t.Errorf("/stop answered %+v", stop)
	}
	rest := decodeEvents(t, sse.readAll(t))
	if end := rest[len(rest)-1]; end.Type != "error" || end.Message != "stopped" || end.Reason != "stopped" {
		t.Errorf("the stopped turn ended with %+v", end)
	}

	// A client that goes away after the first event of a slow turn.
	body, _ = json.Marshal(chatRequest{Conversation: "gone", Text: "!delta-rate 2ms 300"})
	res = postChat(t, base, string(body))
	if _, err := newSSEReader(res.Body).next(); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	next := chatEvents(t, base, "gone", "after")
	if got := answerText(next); got != "echo: after" {
		t.Errorf("the next turn answered %q (%+v)", got, next)
	}
	if end := next[len(next)-1]; end.Type != "done" {
		t.Errorf("the next turn ended with %+v", end)
	}
}
