package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

var ann = telegramtest.User{ID: 42, Username: "ann", FirstName: "Ann"}

// recorder is a core.Handler that hands messages to the test.
type recorder struct{ ch chan core.Message }

func (r *recorder) Handle(_ context.Context, m core.Message) { r.ch <- m }

func (*recorder) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

func (r *recorder) next(t *testing.T) core.Message {
	t.Helper()
	select {
	case m := <-r.ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message delivered")
		return core.Message{}
	}
}

// memState is a core.StateStore in memory.
type memState struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memState) Load(k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k], nil
}

func (s *memState) Save(k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[k] = append([]byte(nil), v...)
	return nil
}

// start runs an adapter against s until the test ends; stop stops it
// early and waits for Start to return.
func start(t *testing.T, s *telegramtest.Server, opts Options) (a *Adapter, r *recorder, stop func()) {
	t.Helper()
	opts.Token, opts.APIURL = s.Token(), s.URL
	if opts.PrivateInterval == 0 { // budgets are tested on their own
		opts.PrivateInterval, opts.GroupInterval = 10*time.Millisecond, 10*time.Millisecond
	}
	if opts.Inbox.Dir == "" {
		opts.Inbox.Dir = t.TempDir()
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r = &recorder{ch: make(chan core.Message, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, r) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Start returned %v after cancel", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Start did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return a, r, stop
}

func TestDirectMessageRoundTrip(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, r, _ := start(t, s, Options{})
	p := s.PushPrivate(ann, "hello <bot>")
	m := r.next(t)
	want := core.Message{EventID: "telegram:1001", Platform: "telegram", Channel: "42", ID: "1", User: "42", UserName: "ann", Text: "hello <bot>", DM: true}
	if m.EventID != want.EventID || m.Channel != want.Channel || m.ID != want.ID || m.User != want.User || m.Text != want.Text || !m.DM || m.Thread != "" {
		t.Fatalf("got %+v\nwant %+v", m, want)
	}
	if p.UpdateID != 1001 {
		t.Fatalf("update id %d", p.UpdateID)
	}
	ctx := context.Background()
	ref, err := a.Send(ctx, core.Place{Channel: m.Channel, ReplyTo: m.ID}, "Working on **it**")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, ref, "Done: `x < y`"); err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, ref, "Done: `x < y`"); err != nil {
		t.Fatalf("an unchanged edit is not an error: %v", err)
	}
	if err := a.SendActivity(ctx, ref, "🔧 **Bash** — `go test ./...`"); err != nil {
		t.Fatal(err)
	}
	got := s.BotMessages(42)
	if len(got) != 2 || got[0].Text != "Done: x < y" || got[0].ReplyTo != 0 || got[1].Text != "🔧 Bash — go test ./..." || got[1].ReplyTo != got[0].ID {
		t.Fatalf("bot messages = %+v", got)
	}
	if got[0].Raw != "Done: <code>x &lt; y</code>" || got[0].ParseMode != "HTML" {
		t.Fatalf("answer sent as %q (%s)", got[0].Raw, got[0].ParseMode)
	}
	if n := len(s.Calls("editMessageText")); n != 2 {
		t.Fatalf("%d edits sent, want 2 (the second answered not modified)", n)
	}
	var menu []struct{ Command, Description string }
	if err := json.Unmarshal([]byte(s.Commands()), &menu); err != nil {
		t.Fatalf("setMyCommands %q: %v", s.Commands(), err)
	}
	var names, inCore []string
	for _, c := range menu {
		names = append(names, c.Command)
		if c.Description == "" {
			t.Errorf("/%s has no description", c.Command)
		}
	}
	for _, c := range core.Commands() {
		inCore = append(inCore, c.Name)
	}
	if !slices.Equal(names, inCore) {
		t.Errorf("setMyCommands = %v, want core's commands %v", names, inCore)
	}
}

func TestWhichMessagesAreDelivered(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, r, _ := start(t, s, Options{})
	const group = -100
	// An answer of the bot in the group, to reply to.
	ref, err := a.Send(context.Background(), core.Place{Channel: "-100"}, "earlier answer")
	if err != nil {
		t.Fatal(err)
	}
	botMsg := mustInt(t, ref.ID)
	tests := []struct {
		name      string
		in        telegramtest.Incoming
		deliver   bool
		text      string
		mentioned bool
	}{
		{"group without mention", telegramtest.Incoming{Chat: group, From: ann, Text: "just chatting"}, false, "", false},
		{"group mention", telegramtest.Incoming{Chat: group, From: ann, Text: "😀 @golem_bot fix   it"}, true, "😀 fix it", true},
		{"mention in other case", telegramtest.Incoming{Chat: group, From: ann, Text: "@Golem_Bot hi"}, true, "hi", true},
		{"mention keeps the lines below", telegramtest.Incoming{Chat: group, From: ann, Text: "@golem_bot  fix this:\n```\nif x {\n\treturn  1\n}\n```"}, true, "fix this:\n```\nif x {\n\treturn  1\n}\n```", true},
		{"mention alone on its line", telegramtest.Incoming{Chat: group, From: ann, Text: "why?\n@golem_bot\n  - a\n  - b"}, true, "why?\n\n  - a\n  - b", true},
		{"other mention only", telegramtest.Incoming{Chat: group, From: ann, Text: "@bob look"}, false, "", false},
		{"reply to the bot", telegramtest.Incoming{Chat: group, From: ann, Text: "and tests?", ReplyTo: botMsg}, true, "and tests?", true},
		{"command for us", telegramtest.Incoming{Chat: group, From: ann, Text: "/stop@golem_bot"}, true, "/stop", true},
		{"command with args", telegramtest.Incoming{Chat: group, From: ann, Text: "/model@golem_bot opus"}, true, "/model opus", true},
		{"bare command", telegramtest.Incoming{Chat: group, From: ann, Text: "/status"}, true, "/status", true},
		{"command for another bot", telegramtest.Incoming{Chat: group, From: ann, Text: "/stop@other_bot"}, false, "", false},
		{"private command", telegramtest.Incoming{Chat: 42, From: ann, Text: "/new@golem_bot"}, true, "/new", true},
		{"start opens help", telegramtest.Incoming{Chat: 42, From: ann, Text: "/start"}, true, "/help", true},
		{"edited message", telegramtest.Incoming{Chat: 42, From: ann, Text: "edited", Edited: true}, false, "", false},
		{"another bot", telegramtest.Incoming{Chat: 42, From: telegramtest.User{ID: 7, IsBot: true}, Text: "beep"}, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := s.Push(tt.in)
			// Updates are handled in order: once the sentinel arrives, the
			// message before it was handled or dropped.
			s.PushPrivate(ann, "sentinel")
			m := r.next(t)
			if !tt.deliver {
				if m.Text != "sentinel" {
					t.Fatalf("delivered %+v", m)
				}
				return
			}
			if m.EventID != "telegram:"+itoa(p.UpdateID) || m.Text != tt.text || m.Mentioned != tt.mentioned {
				t.Fatalf("got %+v, want text %q mentioned %v", m, tt.text, tt.mentioned)
			}
			if s := r.next(t); s.Text != "sentinel" {
				t.Fatalf("then %+v", s)
			}
		})
	}
}

func TestForumTopic(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, r, _ := start(t, s, Options{})
	s.PushTopic(-200, 77, ann, "no mention in a topic")
	s.PushTopic(-200, 77, ann, "@golem_bot in the topic")
	m := r.next(t)
	if m.Text != "in the topic" || m.Thread != "77" || m.Channel != "-200" || m.DM {
		t.Fatalf("got %+v", m)
	}
	typing := a.Typing(context.Background(), m)
	s.WaitUntil(t, 5*time.Second, "a typing action", func() bool { return len(s.Calls("sendChatAction")) > 0 })
	typing()
	c := s.Calls("sendChatAction")[0]
	if c.Params.Get("message_thread_id") != "77" || c.Params.Get("action") != "typing" {
		t.Fatalf("typing sent %v", c.Params)
	}
	ref, err := a.Send(context.Background(), core.Place{Channel: m.Channel, Thread: m.Thread, ReplyTo: m.ID}, "answer")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SendActivity(context.Background(), ref, "tool"); err != nil {
		t.Fatal(err)
	}
	got := s.BotMessages(-200)
	if len(got) != 2 || got[0].Thread != 77 || itoa(got[0].ReplyTo) != m.ID || got[1].Thread != 77 || got[1].ReplyTo != got[0].ID {
		t.Fatalf("bot messages = %+v", got)
	}
}

func TestHTMLRejectedResendsPlainText(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, _, _ := start(t, s, Options{})
	s.Fail("sendMessage", 1, telegramtest.Failure{HTMLOnly: true, Code: 400, Desc: "Bad Request: can't parse entities: Unsupported start tag"})
	ref, err := a.Send(context.Background(), core.Place{Channel: "42"}, "**bold** & <x>")
	if err != nil {
		t.Fatal(err)
	}
	s.Fail("editMessageText", 1, telegramtest.Failure{HTMLOnly: true, Code: 400, Desc: "Bad Request: can't parse entities: x"})
	if err := a.Edit(context.Background(), ref, "**bolder** & <x>"); err != nil {
		t.Fatal(err)
	}
	got := s.BotMessages(42)
	if len(got) != 1 || got[0].Text != "bolder & <x>" || got[0].ParseMode != "" {
		t.Fatalf("bot messages = %+v", got)
	}
}

func TestRetries(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, _, _ := start(t, s, Options{})
	s.Fail("sendMessage", 1, telegramtest.Failure{Code: 429, Desc: "Too Many Requests: retry after 1", RetryAfter: 1})
	s.Fail("sendMessage", 2, telegramtest.Failure{Code: 502, Desc: "Bad Gateway"})
	if _, err := a.Send(context.Background(), core.Place{Channel: "42"}, "through"); err != nil {
		t.Fatal(err)
	}
	calls := s.Calls("sendMessage")
	if len(calls) != 4 {
		t.Fatalf("%d sendMessage calls, want 4", len(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second {
		t.Fatalf("retried %v after a 429 with retry_after 1", gap)
	}
	if got := s.BotMessages(42); len(got) != 1 || got[0].Text != "through" {
		t.Fatalf("bot messages = %+v", got)
	}
	s.Fail("sendMessage", 1, telegramtest.Failure{Code: 403, Desc: "Forbidden: bot was blocked by the user"})
	_, err := a.Send(context.Background(), core.Place{Channel: "42"}, "blocked")
	if err == nil || !strings.Contains(err.Error(), "blocked") {
		t.Fatalf("a 403 answered %v", err)
	}
}

func TestStalledCallIsRetried(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, _, _ := start(t, s, Options{callTimeout: 200 * time.Millisecond})
	s.Fail("sendMessage", 1, telegramtest.Failure{Hang: true})
	if _, err := a.Send(context.Background(), core.Place{Channel: "42"}, "through"); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Calls("sendMessage")); n != 2 {
		t.Errorf("%d sendMessage calls, want 2", n)
	}
	if got := s.BotMessages(42); len(got) != 1 || got[0].Text != "through" {
		t.Fatalf("bot messages = %+v", got)
	}
}

// TestAmbiguousPosts: a sendMessage that failed late (a 502, an answer
// that never came) may have posted, and a bot cannot read the chat to find
// out. Tool activity is then not repeated (never twice); an answer is (never
// lost, at the risk of showing twice); an edit is, harmlessly.
func TestAmbiguousPosts(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, _, _ := start(t, s, Options{callTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	answer, err := a.Send(ctx, core.Place{Channel: "42"}, "answer")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []telegramtest.Failure{
		{Code: 502, Desc: "Bad Gateway", Landed: true},
		{Hang: true, Landed: true},
	} {
		msgs, calls := len(s.BotMessages(42)), len(s.Calls("sendMessage"))
		s.Fail("sendMessage", 1, f)
		err := a.SendActivity(ctx, answer, "🔧 `ls`")
		if !errors.Is(err, retry.ErrMayHaveLanded) {
			t.Errorf("activity after %+v: %v, want ErrMayHaveLanded", f, err)
		}
		if n := len(s.Calls("sendMessage")) - calls; n != 1 {
			t.Errorf("activity after %+v sent %d times, want once", f, n)
		}
		if n := len(s.BotMessages(42)) - msgs; n != 1 {
			t.Errorf("activity after %+v: %d new messages, want 1", f, n)
		}
	}

	msgs := len(s.BotMessages(42))
	s.Fail("sendMessage", 1, telegramtest.Failure{Code: 502, Desc: "Bad Gateway", Landed: true})
	if _, err := a.Send(ctx, core.Place{Channel: "42"}, "an answer is never lost"); err != nil {
		t.Fatal(err)
	}
	if n := len(s.BotMessages(42)) - msgs; n != 2 {
		t.Errorf("an answer whose post landed and failed: %d new messages, want 2 (repeated)", n)
	}

	s.Fail("editMessageText", 1, telegramtest.Failure{Code: 502, Desc: "Bad Gateway", Landed: true})
	if err := a.Edit(ctx, answer, "edited"); err != nil {
		t.Fatalf("an edit that landed and failed: %v", err)
	}
	if got := s.BotMessages(42)[0]; got.Text != "edited" {
		t.Errorf("answer after the edit: %+v", got)
	}
}

func TestShutdownDoesNotWaitOutThePoll(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	_, _, stop := start(t, s, Options{PollTimeout: 50 * time.Second})
	s.WaitUntil(t, 5*time.Second, "a long poll", func() bool { return len(s.Calls("getUpdates")) > 0 })
	if p := s.Calls("getUpdates")[0].Params.Get("timeout"); p != "50" {
		t.Fatalf("long poll timeout %q", p)
	}
	stop() // fails the test if Start takes 10s to return
}

func TestOffsetSurvivesRestart(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	state := &memState{}
	_, r, stop := start(t, s, Options{State: state})
	s.PushPrivate(ann, "one")
	s.PushPrivate(ann, "two")
	seen := map[string]int{}
	for range 2 {
		seen[r.next(t).EventID]++
	}
	stop()
	s.PushPrivate(ann, "three (sent while down)")
	_, r2, stop2 := start(t, s, Options{State: state})
	s.PushPrivate(ann, "four")
	for range 2 {
		seen[r2.next(t).EventID]++
	}
	s.PushPrivate(ann, "sentinel")
	if m := r2.next(t); m.Text != "sentinel" {
		t.Fatalf("a repeated update after restart: %+v", m)
	}
	for _, id := range []string{"telegram:1001", "telegram:1002", "telegram:1003", "telegram:1004"} {
		if seen[id] != 1 {
			t.Errorf("%s delivered %d times: %v", id, seen[id], seen)
		}
	}
	// The offset is saved by the poll loop after the update is handed on:
	// stopping waits for the loop, so the stored value is its last word.
	stop2()
	if b, _ := state.Load(offsetKey); string(b) != "1006" {
		t.Errorf("stored offset %q, want 1006", b)
	}
}

func TestUndecodableUpdateIsConfirmed(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	state := &memState{}
	_, r, _ := start(t, s, Options{State: state})
	// "date" must be a number: the library cannot decode this update.
	bad := s.PushRaw(map[string]any{"message": map[string]any{
		"message_id": 1, "date": "soon", "text": "odd",
		"chat": map[string]any{"id": 42, "type": "private"}, "from": map[string]any{"id": 42, "first_name": "Ann"},
	}})
	want := strconv.FormatInt(bad+1, 10)
	s.WaitUntil(t, 5*time.Second, "a poll past the undecodable update", func() bool {
		for _, c := range s.Calls("getUpdates") {
			if c.Params.Get("offset") == want {
				return true
			}
		}
		return false
	})
	s.PushPrivate(ann, "next")
	if m := r.next(t); m.Text != "next" {
		t.Fatalf("got %+v", m)
	}
}

func TestEntitiesOutOfRangeAreIgnored(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	_, r, _ := start(t, s, Options{})
	for _, e := range []map[string]any{
		{"type": "mention", "offset": 1, "length": int64(math.MaxInt64)}, // offset+length overflows
		{"type": "mention", "offset": 5, "length": 10},
		{"type": "mention", "offset": -1, "length": 3},
	} {
		s.PushRaw(map[string]any{"message": map[string]any{
			"message_id": 1, "date": 1, "text": "@golem_bot hi",
			"chat": map[string]any{"id": 42, "type": "private"}, "from": map[string]any{"id": 42, "first_name": "Ann"},
			"entities": []any{e},
		}})
		if m := r.next(t); m.Text != "@golem_bot hi" {
			t.Errorf("entity %v: got %+v", e, m)
		}
	}
}

func TestAttachments(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	_, r, _ := start(t, s, Options{Inbox: core.Inbox{Dir: t.TempDir(), MaxBytes: 100}})
	s.PushPhoto(42, ann, "what is this?", []byte("JPEGDATA"))
	m := r.next(t)
	if m.Text != "what is this?" || len(m.Attachments) != 1 {
		t.Fatalf("got %+v", m)
	}
	if b, err := os.ReadFile(m.Attachments[0].Path); err != nil || string(b) != "JPEGDATA" {
		t.Fatalf("saved photo %q, %v", b, err)
	}
	s.PushDocument(-5, ann, "@golem_bot review", "../../etc/passwd", []byte("doc"))
	m = r.next(t)
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "../../etc/passwd" || strings.Contains(m.Attachments[0].Path, "..") {
		t.Fatalf("document saved as %+v", m.Attachments)
	}
	s.PushDocument(42, ann, "", "big.bin", bytes.Repeat([]byte("x"), 101))
	m = r.next(t)
	if len(m.Attachments) != 0 || !strings.Contains(m.Text, `"big.bin" was not saved: it is too large`) {
		t.Fatalf("oversized file gave %+v", m)
	}
}

func TestBudgetsKeepWithinTelegramsLimits(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{EnforceRates: true, PerChatInterval: 100 * time.Millisecond, GlobalPerSecond: 10})
	a, _, _ := start(t, s, Options{PrivateInterval: 150 * time.Millisecond, GlobalPerSecond: 8})
	var wg sync.WaitGroup
	for i := range 12 {
		chat := "42"
		if i%2 == 1 {
			chat = itoa(int64(100 + i))
		}
		wg.Go(func() {
			if _, err := a.Send(context.Background(), core.Place{Channel: chat}, "m"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := s.RateLimited(); n != 0 {
		t.Fatalf("the fake answered 429 %d times", n)
	}
	if n := len(s.BotMessages(42)); n != 6 {
		t.Fatalf("%d messages in chat 42, want 6", n)
	}
}

func TestBudgetsForgetQuietChats(t *testing.T) {
	b := newBudget(time.Nanosecond, time.Nanosecond, 1e9, 1<<20)
	busy, err := b.take(context.Background(), 7, classNew) // a chat in use is kept
	if err != nil {
		t.Fatal(err)
	}
	for id := range int64(10 * minSweep) {
		s, err := b.take(context.Background(), id+100, classNew)
		if err != nil {
			t.Fatal(err)
		}
		s.done()
	}
	b.mu.Lock()
	n, kept := len(b.chats), b.chats[7] == busy.chat
	b.mu.Unlock()
	if n > minSweep+1 || !kept {
		t.Errorf("%d chats kept after %d quiet chats (kept the busy one: %v)", n, 10*minSweep, kept)
	}
	busy.done()
}

// queueUp starts a take of class c into chat and returns once it waits or
// has been granted; the class arrives on got when granted.
func queueUp(t *testing.T, b *budget, chat int64, c class, got chan<- class) {
	t.Helper()
	b.mu.Lock()
	before := len(b.waiting[c])
	b.mu.Unlock()
	var granted atomic.Bool
	go func() {
		if s, err := b.take(context.Background(), chat, c); err == nil {
			granted.Store(true)
			got <- c
			s.done()
		}
	}()
	for queued := false; !queued && !granted.Load(); { // wait until it is queued
		b.mu.Lock()
		queued = len(b.waiting[c]) > before
		b.mu.Unlock()
		runtime.Gosched()
	}
}

// grantTokens puts n tokens in the bot's bucket (which refills too slowly
// to matter) and dispatches.
func grantTokens(b *budget, n float64) {
	b.mu.Lock()
	b.tokens = n
	b.dispatchLocked(time.Now())
	b.mu.Unlock()
}

func TestBudgetPrefersNewMessagesOverEdits(t *testing.T) {
	b := newBudget(time.Nanosecond, time.Nanosecond, 1e-9, 1)
	s, err := b.take(context.Background(), 1, classEdit) // takes the free token
	if err != nil {
		t.Fatal(err)
	}
	s.done()
	order := make(chan class, 3)
	queueUp(t, b, 2, classEdit, order)
	queueUp(t, b, 3, classMust, order)
	queueUp(t, b, 4, classNew, order)
	for _, want := range []class{classNew, classMust, classEdit} {
		grantTokens(b, 1)
		if c := <-order; c != want {
			t.Fatalf("granted %v, want %v", c, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.take(ctx, 5, classNew); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait returned %v", err)
	}
}

func TestBudgetKeepsAReserveForNewAnswers(t *testing.T) {
	b := newBudget(time.Nanosecond, time.Nanosecond, 1e-9, 8) // edits leave 6 tokens, continuations 2
	got := make(chan class, 3)
	grantTokens(b, 0)
	queueUp(t, b, 1, classEdit, got)
	queueUp(t, b, 2, classMust, got)
	grantTokens(b, 6)
	if c := <-got; c != classMust {
		t.Fatalf("with 6 tokens granted %v, want the continuation", c)
	}
	b.mu.Lock()
	left, editWaits := b.tokens, len(b.waiting[classEdit])
	b.mu.Unlock()
	if math.Round(left) != 5 || editWaits != 1 {
		t.Fatalf("%v tokens left, %d edits waiting; want 5 and the edit", left, editWaits)
	}
	queueUp(t, b, 3, classNew, got)
	if c := <-got; c != classNew {
		t.Fatalf("granted %v, want the new answer", c)
	}
	grantTokens(b, 7)
	if c := <-got; c != classEdit {
		t.Fatalf("with 7 tokens granted %v, want the edit", c)
	}
}

func TestBudgetHoldsAChatUntilItsCallIsAnsweredAndSpaced(t *testing.T) {
	b := newBudget(time.Hour, time.Hour, 1e9, 100)
	s, err := b.take(context.Background(), 1, classEdit)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan class, 2)
	queueUp(t, b, 1, classNew, got)  // the chat's call is in flight: it waits, though tokens are there
	queueUp(t, b, 2, classEdit, got) // another chat does not wait for it
	if c := <-got; c != classEdit {
		t.Fatalf("granted %v", c)
	}
	s.done()
	b.hold(1, 2*time.Hour) // a 429 with a retry_after longer than the interval
	b.mu.Lock()
	cs := b.chats[1]
	next, waits := cs.next, len(b.waiting[classNew])
	b.mu.Unlock()
	if waits != 1 || time.Until(next) < 119*time.Minute {
		t.Fatalf("after the answer %d new answers wait, the chat is free in %v; want 1 and the retry_after", waits, time.Until(next))
	}
	b.mu.Lock()
	cs.next = time.Now()
	b.dispatchLocked(time.Now())
	b.mu.Unlock()
	if c := <-got; c != classNew {
		t.Fatalf("granted %v", c)
	}
}

func TestEveryCallIntoAChatTakesFromOneBudget(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{EnforceRates: true, PerChatInterval: 100 * time.Millisecond, GlobalPerSecond: 20})
	a, _, _ := start(t, s, Options{PrivateInterval: 110 * time.Millisecond, GlobalPerSecond: 15, GlobalBurst: 4})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 6 {
		chat := itoa(int64(100 + i))
		wg.Go(func() {
			ref, err := a.Send(ctx, core.Place{Channel: chat}, "first")
			if err != nil {
				t.Error(err)
				return
			}
			for _, err := range []error{
				a.EditLatest(ctx, ref, func() string { return "first, growing" }),
				a.SendActivity(ctx, ref, "🔧 **Bash**"),
				a.Edit(ctx, ref, "first, final"),
				func() error { _, err := a.Send(ctx, core.Place{Channel: chat, Continues: true}, "second"); return err }(),
			} {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := s.RateLimited(); n != 0 {
		t.Fatalf("the fake answered 429 %d times", n)
	}
	for i := range 6 {
		if ms := s.BotMessages(int64(100 + i)); len(ms) != 3 || ms[0].Text != "first, final" || ms[2].Text != "second" {
			t.Fatalf("chat %d: %+v", 100+i, ms)
		}
	}
}

func TestRetryAfterAServerErrorWaitsForTheChatsBudget(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{EnforceRates: true})
	// The default interval: a 5xx retry's backoff (0.5 s) is shorter.
	a, _, _ := start(t, s, Options{PrivateInterval: 1050 * time.Millisecond})
	ctx := context.Background()
	if _, err := a.Send(ctx, core.Place{Channel: "42"}, "one"); err != nil {
		t.Fatal(err)
	}
	s.Fail("sendMessage", 1, telegramtest.Failure{Code: 500, Desc: "Internal Server Error"})
	if _, err := a.Send(ctx, core.Place{Channel: "42"}, "two"); err != nil {
		t.Fatal(err)
	}
	if n := s.RateLimited(); n != 0 {
		t.Fatalf("the fake answered 429 %d times: the retry did not wait for the chat's budget", n)
	}
	if ms := s.BotMessages(42); len(ms) != 2 || ms[1].Text != "two" {
		t.Fatalf("messages %+v", ms)
	}
}

func TestUnauthorizedAndTokenNeverLogged(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, err := New(Options{Token: "999:WRONG", APIURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), &recorder{}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a refused token gave %v", err)
	}

	var logs syncBuffer // Start's own calls may still be logging retries
	lg := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a2, _, _ := start(t, s, Options{Logger: lg})
	if _, err := a2.Send(context.Background(), core.Place{Channel: "42"}, "up"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = a2.Send(ctx, core.Place{Channel: "42"}, "down")
	if err == nil {
		t.Fatal("a send to a closed server succeeded")
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("no retry logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String()+err.Error(), s.Token()) {
		t.Fatalf("the token leaked:\n%s\n%v", logs.String(), err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := parseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func itoa(n int64) string { return strconvFormat(n) }

func strconvFormat(n int64) string { return strconv.FormatInt(n, 10) }

func TestDrafts(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	a, _, _ := start(t, s, Options{Drafts: true})
	ctx := context.Background()
	for _, md := range []string{"**dra**", "**draft**"} {
		if err := a.Draft(ctx, core.Place{Channel: "42", ReplyTo: "7"}, md); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Drafts(42); strings.Join(got, "|") != "dra|draft" {
		t.Fatalf("drafts %q", got)
	}
	if c := s.Calls("sendMessageDraft"); c[0].Params.Get("draft_id") != "7" || c[0].Params.Get("parse_mode") != "HTML" {
		t.Fatalf("draft sent with %v", c[0].Params)
	}
	if err := a.Draft(ctx, core.Place{Channel: "-5", ReplyTo: "7"}, "x"); !errors.Is(err, ErrNoDrafts) {
		t.Fatalf("a group draft gave %v", err)
	}
	off, _, _ := start(t, s, Options{})
	if err := off.Draft(ctx, core.Place{Channel: "42"}, "x"); !errors.Is(err, ErrNoDrafts) {
		t.Fatalf("drafts off gave %v", err)
	}
}
