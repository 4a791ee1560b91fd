package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// fakeHandler is a function-field core.Handler.
type fakeHandler struct {
	handle func(ctx context.Context, m core.Message)
}

func (f fakeHandler) Handle(ctx context.Context, m core.Message) { f.handle(ctx, m) }

func (fakeHandler) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

// scripted answers each message with the events script gives for its text,
// sent from another goroutine a little apart like a running turn. It fails
// the test when a message arrives while the previous answer is unfinished.
type scripted struct {
	t      *testing.T
	script func(text string) []parser.Event
	mu     sync.Mutex
	busy   bool
	got    []core.Message
}

func (*scripted) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

func (s *scripted) Handle(_ context.Context, m core.Message) {
	s.mu.Lock()
	if s.busy {
		s.t.Errorf("message %q arrived before the previous answer ended", m.Text)
	}
	s.busy = true
	s.got = append(s.got, m)
	s.mu.Unlock()
	events := s.script(m.Text)
	go func() {
		for i, e := range events {
			time.Sleep(time.Millisecond)
			if i == len(events)-1 {
				s.mu.Lock()
				s.busy = false
				s.mu.Unlock()
			}
			m.Sink(e)
		}
	}()
}

func text(s string) parser.Event { return parser.Event{Type: parser.Text, Content: s} }
func done() parser.Event         { return parser.Event{Type: parser.Done, SessionID: "s"} }
func fail(msg string) parser.Event {
	return parser.Event{Type: parser.Error, Message: msg}
}
func stopped() parser.Event {
	return parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}
}

func TestTranscript(t *testing.T) {
	h := &scripted{t: t, script: func(in string) []parser.Event {
		switch in {
		case "list the files":
			return []parser.Event{
				text("Let me look"),
				{Type: parser.ToolCall, ID: "1", Name: "Bash", Args: json.RawMessage(`{"command":"ls -la"}`)},
				{Type: parser.ToolResult, ID: "1", Content: "a.go\nb.go"},
				{Type: parser.ToolCall, ID: "2", Name: "Read", Args: json.RawMessage(`{"file_path":"/w/a.go"}`)},
				{Type: parser.ToolResult, ID: "2", Content: "no such file\nat all", IsError: true},
				text("There are **two** files:\n"), text("- a.go\n- b.go"),
				done(),
			}
		case "/status":
			return []parser.Event{text("engine: claude-code, idle"), done()}
		case "loop forever":
			return []parser.Event{{Type: parser.Warning, Message: "session expired; started a new one"}, text("partial"), stopped()}
		case "two\n lines":
			return []parser.Event{text("got two lines"), done()}
		case "crash":
			return []parser.Event{fail("the agent exited with status 2")}
		case "too slow":
			return []parser.Event{{Type: parser.Error, Message: "timed out", Reason: parser.TimedOut}}
		case "cli says stopped": // the CLI's own error, worded like golem's outcome
			return []parser.Event{fail("stopped")}
		}
		return []parser.Event{fail("unexpected " + in)}
	}}
	in := "list the files\n\n  /status  \nloop forever\ntwo\\\n lines\ncrash\ntoo slow\ncli says stopped\n/quit\nnever read\n"
	var out bytes.Buffer
	c := New(strings.NewReader(in), &out, Options{User: "ada", Conversation: "proj"})
	if err := c.Start(context.Background(), h); err != nil {
		t.Fatalf("Start: %v", err)
	}
	want := "> Let me look\n" +
		"🔧 Bash — ls -la\n" +
		"📖 Read — /w/a.go\n" +
		"   ✗ no such file\n" +
		"There are **two** files:\n- a.go\n- b.go\n" +
		"\n" +
		"> " + // the empty line: the prompt again
		"> engine: claude-code, idle\n\n" +
		"> ⚠️  session expired; started a new one\npartial\n⏹️  stopped\n\n" +
		"> . got two lines\n\n" +
		"> ❌ error: the agent exited with status 2\n\n" +
		"> ⏱️  timed out; the agent was stopped\n\n" +
		"> ❌ error: stopped\n\n" +
		"> "
	if out.String() != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", out.String(), want)
	}
	var texts []string
	for _, m := range h.got {
		texts = append(texts, m.Text)
		if m.Platform != "console" || m.Channel != "proj" || m.User != "ada" || m.Sink == nil || m.EventID != "" {
			t.Errorf("message %+v", m)
		}
	}
	if got := strings.Join(texts, "|"); got != "list the files|/status|loop forever|two\n lines|crash|too slow|cli says stopped" {
		t.Errorf("messages %q", got)
	}
	if core.KeyFor(h.got[0], core.ScopeThread) != core.KeyFor(h.got[1], core.ScopeThread) {
		t.Error("two messages of one console are two conversations under thread scope")
	}
}

func TestEndOfInputEndsAfterTheLastAnswer(t *testing.T) {
	h := &scripted{t: t, script: func(string) []parser.Event { return []parser.Event{text("bye"), done()} }}
	var out bytes.Buffer
	if err := New(strings.NewReader("hi"), &out, Options{}).Start(context.Background(), h); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if out.String() != "> bye\n\n" {
		t.Errorf("output %q", out.String())
	}
	if m := h.got[0]; m.User != DefaultUser || m.Channel != DefaultConversation {
		t.Errorf("defaults: %+v", m)
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	boom := errors.New("boom")
	err := New(iotest.ErrReader(boom), io.Discard, Options{}).Start(context.Background(), fakeHandler{handle: func(_ context.Context, m core.Message) {
		t.Errorf("unexpected message %q", m.Text)
	}})
	if !errors.Is(err, boom) {
		t.Errorf("Start = %v, want the read error", err)
	}
}

// TestCancelDuringTurn: a cancelled context ends Start even while an answer
// is still streaming, and events arriving later do not block the sink.
func TestCancelDuringTurn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sinks := make(chan func(...parser.Event), 1)
	h := fakeHandler{handle: func(_ context.Context, m core.Message) {
		m.Sink(text("working"))
		sinks <- m.Sink
	}}
	pr, pw := io.Pipe()
	defer pw.Close()
	var out syncBuffer
	started := make(chan error, 1)
	go func() { started <- New(pr, &out, Options{}).Start(ctx, h) }()
	if _, err := io.WriteString(pw, "go\n"); err != nil {
		t.Fatal(err)
	}
	sink := <-sinks
	cancel()
	select {
	case err := <-started:
		if err != nil {
			t.Errorf("Start = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
	for range 10_000 {
		sink(text("late")) // must not block
	}
	sink(done())
	if s := out.String(); strings.Contains(s, "late") {
		t.Errorf("events after the stop were printed: %q", s)
	}
}

func TestNoticesPrintOnTheirOwnLine(t *testing.T) {
	var out bytes.Buffer
	c := New(strings.NewReader(""), &out, Options{})
	c.write("> ", false)
	ctx := context.Background()
	ref, err := c.Send(ctx, core.Place{Channel: "console"}, "Your previous turn was interrupted by a restart.\n")
	if err != nil || ref.ID == "" || ref.Channel != "console" {
		t.Errorf("Send = %+v, %v", ref, err)
	}
	if err := c.Edit(ctx, ref, "edited"); err != nil {
		t.Error(err)
	}
	if err := c.SendActivity(ctx, ref, "🔧 **Bash** — `ls`"); err != nil {
		t.Error(err)
	}
	want := "> \nℹ️  Your previous turn was interrupted by a restart.\nℹ️  edited\n🔧 Bash — ls\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if c.Platform() != "console" || c.Limits().MaxLen < 1<<20 || c.Measure("héllo") != 5 {
		t.Errorf("Platform %q Limits %+v", c.Platform(), c.Limits())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // receives (without blocking) after each write, once made by waitFor
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		select {
		case s.written <- struct{}{}:
		default:
		}
	}
	return s.b.Write(p)
}

// waitFor waits until the output contains want, woken by each write,
// failing t after 20 s.
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	s.mu.Lock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	s.mu.Unlock()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.written:
		case <-deadline:
			t.Fatalf("output lacks %q:\n%s", want, s.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStopWhileAnswering types /stop while an answer streams: it reaches
// the dispatcher at once (not after the answer), and a line typed meanwhile
// is taken after the answer ends.
func TestStopWhileAnswering(t *testing.T) {
	var mu sync.Mutex
	var running func(...parser.Event)
	var got []string
	h := fakeHandler{handle: func(_ context.Context, m core.Message) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m.Text)
		switch m.Text {
		case "long job":
			running = m.Sink
			m.Sink(text("partial"))
		case "/stop":
			m.Sink(text("Stopping."))
			m.Sink(done())
			running(stopped())
		default:
			m.Sink(text("echo: " + m.Text))
			m.Sink(done())
		}
	}}
	pr, pw := io.Pipe()
	var out syncBuffer
	ended := make(chan error, 1)
	go func() { ended <- New(pr, &out, Options{}).Start(context.Background(), h) }()
	if _, err := io.WriteString(pw, "long job\nafter\n/stop\n"); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("Start = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the console did not end; output:\n%s", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"long job", "/stop", "after"}; !slices.Equal(got, want) {
		t.Errorf("messages in the order %q, want %q", got, want)
	}
	s := out.String()
	if !strings.Contains(s, "partial") || !strings.Contains(s, "stopped") || !strings.Contains(s, "echo: after") {
		t.Errorf("output:\n%s", s)
	}
}

func TestFilesPrintTheirPaths(t *testing.T) {
	h := &scripted{t: t, script: func(string) []parser.Event {
		return []parser.Event{text("made a chart"),
			{Type: parser.File, Name: "chart.png", File: &parser.FileInfo{Size: 2048, Path: "/w/outbox/chart.png"}}, done()}
	}}
	var out bytes.Buffer
	c := New(strings.NewReader("chart please\n"), &out, Options{User: "ada", Conversation: "proj"})
	if err := c.Start(context.Background(), h); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if want := "> made a chart\n📎 /w/outbox/chart.png (2048 bytes)\n\n> \n"; out.String() != want {
		t.Errorf("transcript %q, want %q", out.String(), want)
	}
}
