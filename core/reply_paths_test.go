package core_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// drafts is a recorder that can show a live draft (core.Drafter), like
// Telegram's sendMessageDraft in a private chat.
type drafts struct {
	*recorder
	mu     sync.Mutex
	shown  []string // every draft text, in order
	failAt int      // Draft fails from this call on (1-based); 0: never
}

func (d *drafts) CanDraft(core.Place) bool { return true }

func (d *drafts) Draft(_ context.Context, _ core.Place, text string) error {
	d.mu.Lock()
	d.shown = append(d.shown, text)
	n := len(d.shown)
	d.mu.Unlock()
	d.recorder.notify()
	if d.failAt > 0 && n >= d.failAt {
		return errors.New("drafts are not available here")
	}
	return nil
}

func (d *drafts) drafted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.shown...)
}

func (d *drafts) waitDraft(t *testing.T, want string) {
	t.Helper()
	d.recorder.waitFor("draft "+want, func([]string) bool {
		got := d.drafted()
		return len(got) > 0 && got[len(got)-1] == want
	})
}

var answerPlace = core.Place{Channel: "C1", ReplyTo: "u1"}

func TestDraftStreamsThenTheFinalTextIsPostedOnce(t *testing.T) {
	d := &drafts{recorder: newRecorder(t, core.Limits{MaxLen: 4000})}
	r := core.NewReply(context.Background(), d, answerPlace, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "Hello"})
	d.waitDraft(t, "Hello")
	r.Add(parser.Event{Type: parser.ToolCall, Name: "Bash", Args: []byte(`{"command":"ls"}`)})
	r.Add(parser.Event{Type: parser.Text, Content: "world"})
	d.waitDraft(t, "Hello\n\nworld")
	if texts := d.texts(); len(texts) != 0 {
		t.Fatalf("posted %q while drafting; a draft is not a message", texts)
	}
	r.Finish("")
	if got := d.texts(); len(got) != 1 || got[0] != "Hello\n\nworld" {
		t.Errorf("messages = %q, want the final text posted once", got)
	}
	d.recorder.mu.Lock()
	defer d.recorder.mu.Unlock()
	if d.edits != 0 {
		t.Errorf("%d edits; a drafted answer is posted whole at the end", d.edits)
	}
	if len(d.activity) != 1 || d.activity[0].answer.ID != "u1" || !strings.Contains(d.activity[0].text, "Bash") {
		t.Errorf("activity = %+v, want the Bash line under the user's message u1", d.activity)
	}
}

func TestDraftThatFailsFallsBackToEditedMessages(t *testing.T) {
	d := &drafts{recorder: newRecorder(t, core.Limits{MaxLen: 4000}), failAt: 1}
	r := core.NewReply(context.Background(), d, answerPlace, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "one"})
	d.recorder.waitText("one") // posted as a message once the draft was refused
	r.Add(parser.Event{Type: parser.Text, Content: " two"})
	r.Finish("")
	if got := d.texts(); len(got) != 1 || got[0] != "one two" {
		t.Errorf("messages = %q, want one message with the final text", got)
	}
	if n := len(d.drafted()); n != 1 {
		t.Errorf("%d draft calls, want 1: after a refusal the turn edits messages", n)
	}
}

func TestDraftPastOneMessageBecomesMessages(t *testing.T) {
	d := &drafts{recorder: newRecorder(t, core.Limits{MaxLen: 40})} // Split's smallest limit
	r := core.NewReply(context.Background(), d, answerPlace, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "short"})
	d.waitDraft(t, "short")
	r.Add(parser.Event{Type: parser.Text, Content: strings.Repeat(" word", 20)})
	r.Finish("")
	want := "short" + strings.Repeat(" word", 20)
	if got := strings.Join(d.texts(), " "); strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(want), " ") {
		t.Errorf("messages %q do not carry %q", d.texts(), want)
	}
	if len(d.texts()) < 2 {
		t.Errorf("messages = %q, want continuation messages past the 40-rune limit", d.texts())
	}
	d.checkViolations()
}

// latest is a recorder whose edits wait for a shared budget
// (core.LatestEditor, like Slack's workspace-wide chat.update tier): each
// EditLatest blocks until the test lets it through.
type latest struct {
	*recorder
	gate    chan struct{}
	waiting chan struct{} // receives when an EditLatest waits at the gate
}

func (l *latest) EditLatest(ctx context.Context, msg core.MessageRef, text func() string) error {
	select {
	case l.waiting <- struct{}{}:
	default:
	}
	select {
	case <-l.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.recorder.Edit(ctx, msg, text())
}

func TestEditThatWaitedForTheBudgetCarriesTheNewestText(t *testing.T) {
	l := &latest{recorder: newRecorder(t, core.Limits{MaxLen: 4000}), gate: make(chan struct{}), waiting: make(chan struct{}, 1)}
	r := core.NewReply(context.Background(), l, core.Place{Channel: "C1"}, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "a"})
	l.waitText("a")
	r.Add(parser.Event{Type: parser.Text, Content: "b"})
	select {
	case <-l.waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("no edit asked for the budget")
	}
	r.Add(parser.Event{Type: parser.Text, Content: "c"}) // written while the edit waits
	l.gate <- struct{}{}
	l.waitText("abc") // the edit asked for at "ab" sent what there was when it went out
	l.mu.Lock()
	edits := l.edits
	l.mu.Unlock()
	if edits != 1 {
		t.Errorf("%d edits to reach %q, want 1", edits, "abc")
	}
	close(l.gate)
	r.Finish("")
	if got := l.texts(); len(got) != 1 || got[0] != "abc" {
		t.Errorf("messages = %q, want %q", got, "abc")
	}
}

// flaky is a recorder whose Edit fails a number of times first, and whose
// Send fails a number of times first.
type flaky struct {
	*recorder
	mu                   sync.Mutex
	editFails, sendFails int
}

func (f *flaky) Edit(ctx context.Context, ref core.MessageRef, text string) error {
	f.mu.Lock()
	fail := f.editFails > 0
	if fail {
		f.editFails--
	}
	f.mu.Unlock()
	if fail {
		return errors.New("503 service unavailable")
	}
	return f.recorder.Edit(ctx, ref, text)
}

func (f *flaky) Send(ctx context.Context, to core.Place, text string) (core.MessageRef, error) {
	f.mu.Lock()
	fail := f.sendFails > 0
	if fail {
		f.sendFails--
	}
	f.mu.Unlock()
	if fail {
		return core.MessageRef{}, errors.New("503 service unavailable")
	}
	return f.recorder.Send(ctx, to, text)
}

func (f *flaky) failEdits(n int) {
	f.mu.Lock()
	f.editFails = n
	f.mu.Unlock()
}

func TestFinalTextIsDeliveredThroughFailingEdits(t *testing.T) {
	f := &flaky{recorder: newRecorder(t, core.Limits{MaxLen: 4000})}
	r := core.NewReply(context.Background(), f, core.Place{Channel: "C1"}, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "partial"})
	f.waitText("partial")
	f.failEdits(2) // the final edit fails twice, then goes through
	r.Add(parser.Event{Type: parser.Text, Content: " and the rest"})
	r.Finish("⏹️ _Stopped._")
	want := "partial and the rest\n\n⏹️ _Stopped._"
	if got := f.texts(); len(got) != 1 || got[0] != want {
		t.Errorf("messages = %q, want one message %q", got, want)
	}
}

func TestFinalTextThatCannotBeEditedIsPostedAnew(t *testing.T) {
	f := &flaky{recorder: newRecorder(t, core.Limits{MaxLen: 4000})}
	r := core.NewReply(context.Background(), f, core.Place{Channel: "C1"}, discardLogger(), nil)
	r.Add(parser.Event{Type: parser.Text, Content: "partial"})
	f.waitText("partial")
	f.failEdits(1 << 20) // the message can no longer be edited at all
	r.Add(parser.Event{Type: parser.Text, Content: " and the rest"})
	r.Finish("")
	got := f.texts()
	if len(got) != 2 || got[1] != "partial and the rest" {
		t.Errorf("messages = %q, want the final text posted anew after the uneditable one", got)
	}
}

func TestFirstPostThatFailsIsRetried(t *testing.T) {
	f := &flaky{recorder: newRecorder(t, core.Limits{MaxLen: 4000}), sendFails: 1}
	var answered []core.MessageRef
	r := core.NewReply(context.Background(), f, core.Place{Channel: "C1"}, discardLogger(), func(ref core.MessageRef) {
		answered = append(answered, ref)
	})
	r.Add(parser.Event{Type: parser.Text, Content: "hello"})
	f.waitText("hello")
	r.Finish("")
	if got := f.texts(); len(got) != 1 || got[0] != "hello" {
		t.Errorf("messages = %q, want one %q", got, "hello")
	}
	if len(answered) != 1 || answered[0].ID == "" {
		t.Errorf("onAnswer saw %+v, want the one answer message", answered)
	}
}
