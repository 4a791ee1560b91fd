package slack

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/core"
)

// recorder is a core.Handler that hands each message to a channel.
type recorder chan core.Message

func (r recorder) Handle(_ context.Context, m core.Message) { r <- m }

func (recorder) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

func (r recorder) next(t *testing.T) core.Message {
	t.Helper()
	select {
	case m := <-r:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message reached the handler")
		return core.Message{}
	}
}

// startAdapter runs an adapter against a fresh fake and waits until its
// socket is open.
func startAdapter(t *testing.T, fo slacktest.Options, edit func(*Options)) (*slacktest.Server, *Adapter, recorder) {
	t.Helper()
	fake := slacktest.New(fo)
	t.Cleanup(fake.Close)
	opts := Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL,
		Inbox: core.Inbox{Dir: t.TempDir()}}
	if edit != nil {
		edit(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := make(recorder, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, rec) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("the adapter did not connect")
	}
	return fake, a, rec
}

func deliver(t *testing.T, fake *slacktest.Server, ev slacktest.Event) slacktest.Delivery {
	t.Helper()
	d, err := fake.Deliver(ev)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const mention = "<@" + slacktest.BotUserID + ">"

func TestIncoming(t *testing.T) {
	fake, _, rec := startAdapter(t, slacktest.Options{}, nil)
	tests := []struct {
		name string
		ev   slacktest.Event
		want *core.Message // nil: ignored
	}{
		{"mention", slacktest.Event{User: "U1", Channel: "C1", Text: mention + " how do the tests run?"},
			&core.Message{Channel: "C1", User: "U1", Text: "how do the tests run?", Mentioned: true}},
		{"mention in a thread", slacktest.Event{User: "U1", Channel: "C1", ThreadTS: "100.000001", Text: mention + " and here?"},
			&core.Message{Channel: "C1", Thread: "100.000001", User: "U1", Text: "and here?", Mentioned: true}},
		{"command by mention", slacktest.Event{User: "U1", Channel: "C1", Text: mention + "  /stop"},
			&core.Message{Channel: "C1", User: "U1", Text: "/stop", Mentioned: true}},
		{"markup", slacktest.Event{User: "U1", Channel: "C1", Text: mention + " see <https://e.com/x|docs> &amp; <https://e.com> a &lt; b <@U2>"},
			&core.Message{Channel: "C1", User: "U1", Text: "see docs (https://e.com/x) & https://e.com a < b <@U2>", Mentioned: true}},
		{"dm", slacktest.Event{Type: "message", ChannelType: "im", User: "U1", Channel: "D1", Text: "hello"},
			&core.Message{Channel: "D1", User: "U1", Text: "hello", DM: true}},
		{"dm with a mention", slacktest.Event{Type: "message", ChannelType: "im", User: "U1", Channel: "D1", Text: mention + " /new"},
			&core.Message{Channel: "D1", User: "U1", Text: "/new", DM: true, Mentioned: true}},
		{"mention in a dm (message.im covers it)", slacktest.Event{User: "U1", Channel: "D1", Text: mention + " hi"}, nil},
		{"own message", slacktest.Event{Type: "message", ChannelType: "im", User: slacktest.BotUserID, Channel: "D1", Text: "echo"}, nil},
		{"other bot", slacktest.Event{User: "U9", BotID: "B9", Channel: "C1", Text: mention + " loop"}, nil},
		{"bot message subtype", slacktest.Event{Type: "message", ChannelType: "im", SubType: "bot_message", Channel: "D1", Text: "x"}, nil},
		{"edit", slacktest.Event{Type: "message", ChannelType: "im", SubType: "message_changed", User: "U1", Channel: "D1",
			Extra: map[string]any{"message": map[string]any{"type": "message", "user": "U1", "text": "edited"}}}, nil},
		{"delete", slacktest.Event{Type: "message", ChannelType: "im", SubType: "message_deleted", Channel: "D1",
			Extra: map[string]any{"deleted_ts": "1.1"}}, nil},
		{"edited mention", slacktest.Event{User: "U1", Channel: "C1", Text: mention + " again",
			Extra: map[string]any{"edited": map[string]any{"user": "U1", "ts": "1.2"}}}, nil},
		{"channel message without mention", slacktest.Event{Type: "message", ChannelType: "channel", User: "U1", Channel: "C1", Text: "chatter"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deliver(t, fake, tt.ev)
			// A sentinel after the event: the handler sees messages in order,
			// so an ignored event is one the sentinel arrives first after.
			sentinel := deliver(t, fake, slacktest.Event{User: "U0", Channel: "C0", Text: mention + " sentinel"})
			got := rec.next(t)
			if tt.want == nil {
				if got.EventID != sentinel.EventID {
					t.Fatalf("handled %+v, want it ignored", got)
				}
				return
			}
			want := *tt.want
			want.Platform, want.Workspace, want.EventID, want.ID = "slack", slacktest.TeamID, d.EventID, d.TS
			if got.Sink != nil || got.Attachments != nil {
				t.Fatalf("unexpected sink or attachments: %+v", got)
			}
			if got.EventID != want.EventID || got.Platform != want.Platform || got.Workspace != want.Workspace ||
				got.Channel != want.Channel || got.Thread != want.Thread || got.ID != want.ID || got.User != want.User ||
				got.Text != want.Text || got.Mentioned != want.Mentioned || got.DM != want.DM {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if s := rec.next(t); s.EventID != sentinel.EventID {
				t.Fatalf("after the message: %+v", s)
			}
		})
	}
}

func TestSlashCommand(t *testing.T) {
	fake, _, rec := startAdapter(t, slacktest.Options{}, nil)
	for _, tt := range []struct{ text, want string }{{"stop", "/stop"}, {"model opus", "/model opus"}, {"", "/help"}, {"/new", "/new"}} {
		d, err := fake.SlashCommand("U1", "C1", "/golem", tt.text)
		if err != nil {
			t.Fatal(err)
		}
		m := rec.next(t)
		if m.Text != tt.want || m.Channel != "C1" || m.User != "U1" || !m.Mentioned || m.Workspace != slacktest.TeamID || m.EventID == "" {
			t.Errorf("/golem %s: %+v, want text %q", tt.text, m, tt.want)
		}
		if !fake.Wait(5*time.Second, func() bool { _, ok := fake.Acked(d.EnvelopeID); return ok }) {
			t.Error("slash command not acked")
		}
	}
}

// blocker is a handler that holds every message until released, standing
// for slow work after the event.
// blocker's Handle holds each message until released, as a slow store
// write would, and records when it returned.
type blocker struct {
	got      chan core.Message
	release  chan struct{}
	returned chan time.Time
}

func (blocker) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

func (b blocker) Handle(_ context.Context, m core.Message) {
	b.got <- m
	<-b.release
	b.returned <- time.Now()
}

// An envelope is acked once Handle has kept its message, never before:
// killed in between, golem gets the event again from Slack.
func TestAckOnceHandleReturns(t *testing.T) {
	fake := slacktest.New(slacktest.Options{})
	defer fake.Close()
	a, err := New(Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	b := blocker{got: make(chan core.Message, 1), release: make(chan struct{}), returned: make(chan time.Time, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, b) }()
	defer func() { cancel(); <-done }()
	fake.Wait(10*time.Second, func() bool { return fake.Open() == 1 })
	d := deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " hi"})
	<-b.got // the handler now holds the message
	if fake.Wait(500*time.Millisecond, func() bool { _, ok := fake.Acked(d.EnvelopeID); return ok }) {
		t.Fatal("the envelope was acked before Handle returned")
	}
	close(b.release)
	returned := <-b.returned
	if !fake.Wait(10*time.Second, func() bool { _, ok := fake.Acked(d.EnvelopeID); return ok }) {
		t.Fatal("the envelope was not acked after Handle returned")
	}
	if ack, _ := fake.Acked(d.EnvelopeID); ack.At.Before(returned) {
		t.Fatalf("acked at %v, before Handle returned at %v", ack.At, returned)
	}
}

func TestSendEditActivity(t *testing.T) {
	fake, a, _ := startAdapter(t, slacktest.Options{}, nil)
	ctx := context.Background()

	top, err := a.Send(ctx, core.Place{Channel: "C1", ReplyTo: "1.1"}, "**Answer** <!here>")
	if err != nil {
		t.Fatal(err)
	}
	inThread, err := a.Send(ctx, core.Place{Channel: "C1", Thread: "5.5", ReplyTo: "5.6"}, "in thread")
	if err != nil {
		t.Fatal(err)
	}
	started, err := a.Send(ctx, core.Place{Channel: "C1", ReplyTo: "7.7", StartThread: true}, "opens a thread")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, top, "**Answer**, longer"); err != nil {
		t.Fatal(err)
	}
	if err := a.SendActivity(ctx, top, "🔧 **Bash** — `go test ./...`"); err != nil {
		t.Fatal(err)
	}
	if err := a.SendActivity(ctx, inThread, "📖 **Read**"); err != nil {
		t.Fatal(err)
	}
	posts := fake.Calls("chat.postMessage")
	if len(posts) != 5 {
		t.Fatalf("%d posts", len(posts))
	}
	for i, want := range []struct{ thread, text string }{
		{"", "*Answer* &lt;!here&gt;"},
		{"5.5", "in thread"},
		{"7.7", "opens a thread"},
		{top.ID, "🔧 *Bash* — `go test ./...`"},
		{"5.5", "📖 *Read*"},
	} {
		if posts[i].Args["thread_ts"] != want.thread || posts[i].Args["text"] != want.text {
			t.Errorf("post %d: thread_ts %q text %q, want %q %q", i, posts[i].Args["thread_ts"], posts[i].Args["text"], want.thread, want.text)
		}
	}
	if top.Thread != "" || inThread.Thread != "5.5" || started.Thread != "7.7" || top.Channel != "C1" {
		t.Errorf("refs %+v %+v %+v", top, inThread, started)
	}
	if m, _ := fake.Message("C1", top.ID); m.Text != "*Answer*, longer" || m.Edits != 1 {
		t.Errorf("answer after edit: %+v", m)
	}
}

func TestRetries(t *testing.T) {
	fake, a, _ := startAdapter(t, slacktest.Options{}, nil)
	a.retry.FirstBackoff = 10 * time.Millisecond
	ctx := context.Background()
	fake.Fail("chat.postMessage", 1, slacktest.Failure{Status: 429, RetryAfter: 1})
	fake.Fail("chat.postMessage", 1, slacktest.Failure{Status: 503})
	ref, err := a.Send(ctx, core.Place{Channel: "C1"}, "after trouble")
	if err != nil {
		t.Fatal(err)
	}
	posts := fake.Calls("chat.postMessage")
	if len(posts) != 3 || posts[2].Status != 200 {
		t.Fatalf("posts = %+v", posts)
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < time.Second {
		t.Errorf("retried %v after a 429 with Retry-After: 1", gap)
	}

	fake.Fail("chat.update", 1, slacktest.Failure{Status: 429, RetryAfter: 1})
	fake.Fail("chat.update", 1, slacktest.Failure{Status: 500})
	if err := a.Edit(ctx, ref, "edited"); err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message("C1", ref.ID); m.Text != "edited" {
		t.Errorf("text after retried edit: %q", m.Text)
	}

	fake.Fail("chat.update", 1, slacktest.Failure{Error: "message_not_found"})
	if err := a.Edit(ctx, ref, "again"); err == nil || !strings.Contains(err.Error(), "message_not_found") {
		t.Errorf("edit refused by Slack: %v", err)
	}
	if n := fake.Count("chat.update", 0); n != 4 {
		t.Errorf("%d chat.update calls, want 4 (no retry of ok:false)", n)
	}

	fake.Fail("chat.postMessage", maxFailures+1, slacktest.Failure{Status: 502})
	if _, err := a.Send(ctx, core.Place{Channel: "C2"}, "doomed"); err == nil {
		t.Error("a post that always fails succeeded")
	}
}

// TestNoDoublePost: a chat.postMessage that failed late (a 5xx, an answer
// that never came) but posted all the same is found by reading the channel
// or thread back and not posted again; one that did not land is repeated.
func TestNoDoublePost(t *testing.T) {
	fake, a, _ := startAdapter(t, slacktest.Options{}, nil)
	a.retry.FirstBackoff = 10 * time.Millisecond
	a.retry.AttemptTimeout = 300 * time.Millisecond
	ctx := context.Background()
	top, err := a.Send(ctx, core.Place{Channel: "C1"}, "same")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		fault  slacktest.Failure
		thread bool
		posts  int // chat.postMessage calls
	}{
		{"500, landed", slacktest.Failure{Status: 500, Landed: true}, false, 1},
		{"500, not landed", slacktest.Failure{Status: 500}, false, 2},
		{"hang, landed", slacktest.Failure{Hang: true, Landed: true}, false, 1},
		{"hang, not landed", slacktest.Failure{Hang: true}, false, 2},
		{"internal_error, landed", slacktest.Failure{Error: "internal_error", Landed: true}, false, 1},
		{"500 in a thread, landed", slacktest.Failure{Status: 500, Landed: true}, true, 1},
		{"hang in a thread, landed", slacktest.Failure{Hang: true, Landed: true}, true, 1},
		{"500 in a thread, not landed", slacktest.Failure{Status: 500}, true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			place, lookup := core.Place{Channel: "C1"}, "conversations.history"
			if tt.thread {
				place.Thread, lookup = top.ID, "conversations.replies"
			}
			before := len(fake.BotMessages("C1"))
			posts, lookups := fake.Count("chat.postMessage", 0), fake.Count(lookup, 200)
			fake.Fail("chat.postMessage", 1, tt.fault)
			// The same text as a message already there: only a post of
			// this Send may count as landed.
			ref, err := a.Send(ctx, place, "same")
			if err != nil {
				t.Fatal(err)
			}
			msgs := fake.BotMessages("C1")
			if len(msgs) != before+1 {
				t.Fatalf("%d new bot messages, want 1: %+v", len(msgs)-before, msgs)
			}
			last := msgs[len(msgs)-1]
			if last.TS != ref.ID || last.Text != "same" || last.ThreadTS != place.Thread {
				t.Errorf("Send returned %+v for the message %+v", ref, last)
			}
			if n := fake.Count("chat.postMessage", 0) - posts; n != tt.posts {
				t.Errorf("%d chat.postMessage calls, want %d", n, tt.posts)
			}
			if n := fake.Count(lookup, 200) - lookups; n != 1 {
				t.Errorf("%d %s calls, want 1", n, lookup)
			}
		})
	}

	// A post refused before it went out needs no lookup.
	lookups := fake.Count("conversations.history", 0)
	fake.Fail("chat.postMessage", 1, slacktest.Failure{Status: 429, RetryAfter: 1})
	if _, err := a.Send(ctx, core.Place{Channel: "C1"}, "after a 429"); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("conversations.history", 0); n != lookups {
		t.Errorf("a 429 led to %d history reads", n-lookups)
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(50, 3)
	for i := range 3 {
		if d := b.lim.Reserve().Delay(); d != 0 {
			t.Fatalf("burst call %d waits %v", i, d)
		}
	}
	// The rest of the minute's 50 are spread so that 50 never fit in 60s.
	if d := b.lim.Reserve().Delay(); d < 60*time.Second/47 {
		t.Fatalf("4th call waits %v", d)
	}
	b.pause(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.wait(ctx); err == nil {
		t.Fatal("a paused budget let a call through")
	}
}

func TestTyping(t *testing.T) {
	fake, a, rec := startAdapter(t, slacktest.Options{}, nil)
	d := deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " work"})
	m := rec.next(t)
	stop := a.Typing(context.Background(), m)
	has := func(want bool) func() bool {
		return func() bool {
			msg, _ := fake.Message("C1", d.TS)
			return (len(msg.Reactions) == 1 && msg.Reactions[0] == "hourglass_flowing_sand") == want
		}
	}
	if !fake.Wait(10*time.Second, has(true)) {
		t.Fatal("no working reaction")
	}
	stop()
	if !fake.Wait(10*time.Second, func() bool { return has(false)() && fake.Count("reactions.remove", 200) == 1 }) {
		t.Fatal("the working reaction stayed")
	}
}

// TestTypingAfterLateFailures: a reactions.add that failed late but
// landed is repeated, finds the reaction there, and the reaction is still
// removed at stop; so is one whose remove failed late.
func TestTypingAfterLateFailures(t *testing.T) {
	fake, a, rec := startAdapter(t, slacktest.Options{}, nil)
	a.retry.FirstBackoff = time.Millisecond
	d := deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " work"})
	m := rec.next(t)
	fake.Fail("reactions.add", 1, slacktest.Failure{Status: 500, Landed: true})
	fake.Fail("reactions.remove", 1, slacktest.Failure{Status: 503, Landed: true})
	stop := a.Typing(context.Background(), m)
	if !fake.Wait(10*time.Second, func() bool { return fake.Count("reactions.add", 200) == 1 }) {
		t.Fatal("reactions.add was not repeated")
	}
	stop()
	gone := func() bool {
		msg, _ := fake.Message("C1", d.TS)
		return len(msg.Reactions) == 0 && fake.Count("reactions.remove", 200) == 1
	}
	if !fake.Wait(10*time.Second, gone) {
		msg, _ := fake.Message("C1", d.TS)
		t.Fatalf("reactions %v after stop; calls %+v", msg.Reactions, fake.Calls("reactions.remove"))
	}
}

func TestAttachments(t *testing.T) {
	fake, _, rec := startAdapter(t, slacktest.Options{}, func(o *Options) { o.Inbox.MaxBytes = 100 })
	small := fake.AddFile("../../etc/notes.txt", "text/plain", []byte("file body"))
	big := fake.AddFile("big.bin", "application/octet-stream", make([]byte, 500))
	deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " read these", Files: []map[string]any{small, big}})
	m := rec.next(t)
	if len(m.Attachments) != 1 {
		t.Fatalf("attachments %+v", m.Attachments)
	}
	att := m.Attachments[0]
	body, err := os.ReadFile(att.Path)
	if err != nil || string(body) != "file body" || att.Name != "../../etc/notes.txt" || att.Size != 9 {
		t.Fatalf("saved %+v: %q %v", att, body, err)
	}
	if !strings.HasSuffix(att.Path, "-notes.txt") || strings.Contains(att.Path, "..") {
		t.Errorf("unsafe path %q", att.Path)
	}
	if !strings.HasPrefix(m.Text, "read these") || !strings.Contains(m.Text, `"big.bin" was not saved: it is too large`) {
		t.Errorf("text %q", m.Text)
	}
	if fake.Downloads(small["id"].(string)) != 1 || fake.Downloads(big["id"].(string)) != 0 {
		t.Error("downloads not as expected")
	}
}

func TestAttachmentByID(t *testing.T) {
	fake, _, rec := startAdapter(t, slacktest.Options{}, nil)
	f := fake.AddFile("a.txt", "text/plain", []byte("abc"))
	stub := map[string]any{"id": f["id"], "file_access": "check_file_info"}
	fake.Fail("files.info", 1, slacktest.Failure{Status: 500})
	deliver(t, fake, slacktest.Event{Type: "message", ChannelType: "im", SubType: "file_share", User: "U1", Channel: "D1", Text: "see", Files: []map[string]any{stub}})
	m := rec.next(t)
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "a.txt" || m.Attachments[0].Size != 3 {
		t.Fatalf("attachments %+v, text %q", m.Attachments, m.Text)
	}
}

// TestAttachmentKeepsOrder: a message whose file is still downloading is
// handed on before the message that followed it in the channel.
func TestAttachmentKeepsOrder(t *testing.T) {
	fake, _, rec := startAdapter(t, slacktest.Options{}, nil)
	f := fake.AddFile("a.txt", "text/plain", []byte("abc"))
	stub := map[string]any{"id": f["id"], "file_access": "check_file_info"}
	fake.Fail("files.info", 1, slacktest.Failure{Status: 500}) // the download waits out a backoff
	deliver(t, fake, slacktest.Event{Type: "message", ChannelType: "im", SubType: "file_share", User: "U1", Channel: "D1", Text: "see the file", Files: []map[string]any{stub}})
	deliver(t, fake, slacktest.Event{Type: "message", ChannelType: "im", User: "U1", Channel: "D1", Text: "and fix it"})
	deliver(t, fake, slacktest.Event{Type: "message", ChannelType: "im", User: "U1", Channel: "D1", Text: "thanks"})
	for _, want := range []string{"see the file", "and fix it", "thanks"} {
		if m := rec.next(t); m.Text != want {
			t.Fatalf("got %q (attachments %+v), want %q", m.Text, m.Attachments, want)
		}
	}
}

func TestStartWaitsForSlack(t *testing.T) {
	fake := slacktest.New(slacktest.Options{})
	defer fake.Close()
	fake.Fail("auth.test", 2*maxFailures, slacktest.Failure{Status: 503})
	a, err := New(Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	a.retry.FirstBackoff = time.Millisecond
	rec := make(recorder, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, rec) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	deliverWhenOpen(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " up"})
	if m := rec.next(t); m.Text != "up" {
		t.Fatalf("got %+v", m)
	}
}

// deliverWhenOpen waits for the adapter's socket, then delivers ev.
func deliverWhenOpen(t *testing.T, fake *slacktest.Server, ev slacktest.Event) {
	t.Helper()
	if !fake.Wait(20*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("the adapter did not connect")
	}
	deliver(t, fake, ev)
}

func TestReconnect(t *testing.T) {
	fake, _, rec := startAdapter(t, slacktest.Options{}, nil)
	fake.DropSockets()
	if !fake.Wait(20*time.Second, func() bool { return fake.Connects() == 2 && fake.Open() == 1 }) {
		t.Fatal("no reconnect after a dropped socket")
	}
	deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " still there?"})
	if m := rec.next(t); m.Text != "still there?" {
		t.Fatalf("after reconnect: %+v", m)
	}
	fake.RequestDisconnect()
	if !fake.Wait(20*time.Second, func() bool { return fake.Connects() == 3 && fake.Open() == 1 }) {
		t.Fatal("no reconnect after a disconnect request")
	}
	deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " and now?"})
	if m := rec.next(t); m.Text != "and now?" {
		t.Fatalf("after reconnect: %+v", m)
	}
}

func TestBadToken(t *testing.T) {
	fake := slacktest.New(slacktest.Options{})
	defer fake.Close()
	a, err := New(Options{BotToken: "xoxb-revoked", AppToken: slacktest.AppToken, APIURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), make(recorder, 1)); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("Start with a refused token: %v", err)
	}
	a, err = New(Options{BotToken: slacktest.BotToken, AppToken: "xapp-revoked", APIURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), make(recorder, 1)); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("Start with a refused app token: %v", err)
	}
	if _, err := New(Options{BotToken: "xoxp-user", AppToken: "xapp-1"}); err == nil {
		t.Fatal("a user token was accepted as the bot token")
	}
}
