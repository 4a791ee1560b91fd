package telegram

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/nettest"
)

var bob = telegramtest.User{ID: 43, Username: "bob", FirstName: "Bob"}

// waitRuns waits until the fake agent has been started n times. Its log is
// a file no fake signals a change of, so it is polled.
func waitRuns(t *testing.T, st *stack, n int) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for len(st.invocations()) < n {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the agent ran %d times, want %d", len(st.invocations()), n)
		}
	}
}

func prompts(st *stack) []string {
	var out []string
	for _, inv := range st.invocations() {
		out = append(out, prompt(inv))
	}
	return out
}

// A document that takes long to download holds up the later messages of
// its own chat, in order, but no other chat.
func TestE2ESlowDownloadHoldsOnlyItsChat(t *testing.T) {
	net := nettest.NewStall("/file/")
	st := newStack(t, telegramtest.Options{})
	st.allow = []string{"telegram:42", "telegram:43"}
	st.opts.HTTPClient = net.Client()
	st.busy = core.BusyQueue // "and fix it" may come once the file's answer runs: a turn of its own
	st.up()
	net.Hold()
	st.s.PushDocument(42, ann, "see the file", "notes.txt", []byte("the notes"))
	net.WaitHeld(t, 1) // the download has started and hangs
	st.s.PushPrivate(ann, "and fix it")
	st.s.PushPrivate(bob, "hello from another chat")
	st.waitText(43, "echo: hello from another chat")
	if p := prompts(st); len(p) != 1 {
		t.Fatalf("agent runs %q while the download hangs, want only the other chat's", p)
	}
	net.Release()
	st.waitText(42, "echo: see the file")
	st.waitText(42, "echo: and fix it")
	p := prompts(st)
	if len(p) != 3 || !strings.HasPrefix(p[1], "see the file") || p[2] != "and fix it" {
		t.Fatalf("agent prompts %q, want the other chat's, then the file, then \"and fix it\"", p)
	}
	if !strings.Contains(p[1], "notes.txt") {
		t.Errorf("the file's prompt names no file: %q", p[1])
	}
}

// /stop is not held up by a download in its chat: it stops the running
// answer at once; the message with the file runs once it has arrived.
func TestE2EStopOvertakesADownload(t *testing.T) {
	net := nettest.NewStall("/file/")
	st := newStack(t, telegramtest.Options{})
	st.opts.HTTPClient = net.Client()
	st.up()
	st.s.PushPrivate(ann, "!text 30\n!hang")
	waitRuns(t, st, 1)
	net.Hold()
	st.s.PushDocument(42, ann, "and this file", "x.txt", []byte("x"))
	net.WaitHeld(t, 1)
	st.s.PushPrivate(ann, "/stop")
	st.waitText(42, "Stopped")
	st.waitText(42, "Stopping the running answer")
	net.Release()
	st.waitText(42, "echo: and this file")
}

// golem stops (as when it is killed) while a document downloads, after the
// poll has gone past its update, which Telegram then never sends again:
// the next start hands it on from the journal, once; the update handed on
// meanwhile is not handed on again.
func TestDownloadInProgressSurvivesARestart(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	state := &memState{}
	net := nettest.NewStall("/file/")
	net.Hold()
	_, r, stop := start(t, s, Options{State: state, HTTPClient: net.Client()})
	doc := s.PushDocument(42, ann, "the file", "f.txt", []byte("data"))
	net.WaitHeld(t, 1)
	other := s.PushPrivate(bob, "meanwhile")
	if m := r.next(t); m.Text != "meanwhile" {
		t.Fatalf("got %+v while the download hangs", m)
	}
	past := strconv.FormatInt(other.UpdateID+1, 10)
	s.WaitUntil(t, 10*time.Second, "a poll past both updates", func() bool {
		return slices.ContainsFunc(s.Calls("getUpdates"), func(c telegramtest.Call) bool { return c.Params.Get("offset") == past })
	})
	if b, _ := state.Load(pendingKey); !strings.Contains(string(b), `"f.txt"`) {
		t.Fatalf("the update whose download hangs is not journaled: %s", b)
	}
	stop()
	select {
	case m := <-r.ch:
		t.Fatalf("handed on while stopping: %+v", m)
	default:
	}

	_, r2, _ := start(t, s, Options{State: state})
	m := r2.next(t)
	if m.EventID != "telegram:"+strconv.FormatInt(doc.UpdateID, 10) || len(m.Attachments) != 1 {
		t.Fatalf("after the restart got %+v, want the document's update with its file", m)
	}
	s.PushPrivate(ann, "sentinel")
	if m := r2.next(t); m.Text != "sentinel" {
		t.Fatalf("after the restart got %+v again, want the sentinel", m)
	}
	s.WaitUntil(t, 10*time.Second, "an empty journal", func() bool {
		b, _ := state.Load(pendingKey)
		return len(b) == 0
	})
}

// Handle returns at once while Telegram does not answer sendMessage: a
// refusal, a command's answer and a "queue full" answer wait for it off
// the poll loop, which goes on taking messages; once Telegram answers they
// arrive, each conversation's in the order they were asked for.
func TestE2EAnswersWaitOffThePollLoop(t *testing.T) {
	net := nettest.NewStall("/sendMessage")
	st := newStack(t, telegramtest.Options{})
	st.allow = []string{"telegram:42", "telegram:43"}
	st.opts.HTTPClient = net.Client()
	st.queueDepth = -1 // none may wait: a second message is answered "queue full"
	st.busy = core.BusyQueue
	st.up()
	st.s.PushPrivate(ann, "!hang")
	waitRuns(t, st, 1)
	net.Hold()
	st.s.PushPrivate(ann, "while it runs")                             // queue full
	st.s.PushPrivate(ann, "/status")                                   // a command
	st.s.PushPrivate(telegramtest.User{ID: 99, Username: "eve"}, "hi") // a refusal
	net.WaitHeld(t, 2)                                                 // two chats' first answers hang
	st.s.PushPrivate(bob, "still polling?")
	waitRuns(t, st, 2)
	if n := len(st.s.BotMessages(42)) + len(st.s.BotMessages(99)); n != 0 {
		t.Fatalf("%d answers posted while sendMessage hangs", n)
	}
	net.Release()
	st.waitText(99, "not allowed")
	st.waitText(42, "State: answering")
	var texts []string
	for _, m := range st.s.BotMessages(42) {
		texts = append(texts, m.Text)
	}
	full := slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, "messages are waiting") })
	status := slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, "Engine:") })
	if full < 0 || status < 0 || full > status {
		t.Fatalf("answers in chat 42 %q, want \"queue full\" before the status", texts)
	}
	st.s.PushPrivate(ann, "/stop")
	st.waitText(42, "Stopped")
}

// Stopping golem delivers the short answers still waiting for the
// platform, also those queued behind one that hangs.
func TestE2EShutdownDeliversPendingAnswers(t *testing.T) {
	net := nettest.NewStall("/sendMessage")
	st := newStack(t, telegramtest.Options{})
	st.opts.HTTPClient = net.Client()
	st.up()
	net.Hold()
	st.s.PushPrivate(ann, "/help")
	net.WaitHeld(t, 1)
	st.s.PushPrivate(ann, "/model opus")
	st.s.WaitUntil(t, 20*time.Second, "the second command taken", func() bool {
		return slices.ContainsFunc(st.s.Calls("getUpdates"), func(c telegramtest.Call) bool { return c.Params.Get("offset") == "1003" })
	})
	stopped := make(chan struct{})
	go func() { st.stop(); close(stopped) }()
	net.Release()
	<-stopped
	var texts []string
	for _, m := range st.s.BotMessages(42) {
		texts = append(texts, m.Text)
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "Commands:") || !strings.Contains(texts[1], "Model set to opus") {
		t.Fatalf("after shutdown chat 42 shows %q, want the help, then the model answer", texts)
	}
}

var _ core.StateStore = (*memState)(nil)
