package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
)

const wait = 10 * time.Second

// startAdapter runs an adapter against fake with h and stops both when the
// test ends. It waits for the gateway handshake.
func startAdapter(t testing.TB, fake *discordtest.Server, opts Options, h core.Handler) *Adapter {
	t.Helper()
	a := newAdapter(t, fake, opts)
	startAdapterWith(t, fake, a, h)
	return a
}

// newAdapter is an adapter for fake, not started.
func newAdapter(t testing.TB, fake *discordtest.Server, opts Options) *Adapter {
	t.Helper()
	opts.Token = fake.Options().BotToken
	opts.APIURL = fake.URL()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startAdapterWith starts a with h, waits for the handshake and the
// command registration, and stops it when the test ends: Start must then
// return, its gateway socket closed.
func startAdapterWith(t testing.TB, fake *discordtest.Server, a *Adapter, h core.Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start: %v", err)
			}
			if !fake.Wait(wait, func(v discordtest.View) bool { return v.Sockets() == 0 }) {
				t.Errorf("a gateway socket outlived Start")
			}
		case <-time.After(wait):
			t.Errorf("Start did not return after cancel")
		}
	})
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Connected() && len(v.Calls("PUT /applications/")) > 0 }) {
		t.Fatal("the adapter did not connect and register its commands")
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("GOLEM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// recorder is a core.Handler that hands messages to the test.
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
	case <-time.After(wait):
		t.Fatal("no message reached the handler")
		return core.Message{}
	}
}

func (r recorder) none(t *testing.T, after func()) {
	t.Helper()
	after()
	select {
	case m := <-r:
		t.Fatalf("unexpected message reached the handler: %+v", m)
	default:
	}
}

func newFake(t testing.TB, opts discordtest.Options) *discordtest.Server {
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 200 * time.Millisecond
	}
	f := discordtest.New(opts)
	t.Cleanup(f.Close)
	return f
}

func TestStartRegistersCommandsAndIntents(t *testing.T) {
	for _, tt := range []struct {
		name   string
		guilds []string
		scopes []string
	}{
		{"globally", nil, []string{""}},
		{"per guild", []string{"g1", "g2"}, []string{"g1", "g2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, discordtest.Options{})
			startAdapter(t, fake, Options{Guilds: tt.guilds}, make(recorder, 8))
			fake.Wait(wait, func(v discordtest.View) bool { return len(v.Calls("PUT /applications/")) == len(tt.scopes) })
			want := []string{"ask"}
			for _, c := range core.Commands() {
				want = append(want, c.Name)
			}
			for _, scope := range tt.scopes {
				var names []string
				for _, c := range fake.Commands(scope) {
					names = append(names, c["name"].(string))
					if c["name"] == "allow" {
						raw, _ := json.Marshal(c["options"])
						var opts []struct {
							Name     string
							Required bool
						}
						_ = json.Unmarshal(raw, &opts)
						if len(opts) != 2 || opts[0].Name != "id" || !opts[0].Required || opts[1].Name != "for" || opts[1].Required {
							t.Errorf("/allow's options in %q: %s, want id (required) and for", scope, raw)
						}
					}
				}
				if got := strings.Join(names, " "); got != strings.Join(want, " ") {
					t.Errorf("commands in %q = %q, want /ask and core's commands %q", scope, got, want)
				}
			}
			var intents int
			fake.Wait(wait, func(v discordtest.View) bool { intents = v.Intents(); return true })
			if intents != int(Intents) || intents&(1<<15) == 0 {
				t.Errorf("intents = %d, want %d with message content", intents, Intents)
			}
		})
	}
}

func TestMessagesBecomeCoreMessages(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	fake.DM("dm1")
	rec := make(recorder, 8)
	inbox := t.TempDir()
	startAdapter(t, fake, Options{Inbox: core.Inbox{Dir: inbox, MaxBytes: 1000}}, rec)
	bot := fake.Options().BotUserID

	id := fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1", Content: "<@" + bot + "> run the tests", Mentions: []string{bot},
		Attachments: []discordtest.Attachment{{Name: "../notes.txt", Data: []byte("hello")}, {Name: "big.bin", Data: make([]byte, 2000)}}})
	m := rec.next(t)
	wantText := "run the tests\n\n(The attachment \"big.bin\" was not saved: it is too large.)"
	if m.EventID != id || m.ID != id || m.Channel != "c1" || m.Workspace != "g1" || m.User != "u1" || m.Text != wantText || !m.Mentioned || m.DM {
		t.Errorf("mention = %+v", m)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "../notes.txt" || !strings.HasPrefix(m.Attachments[0].Path, inbox+"/") {
		t.Fatalf("attachments = %+v, want notes.txt saved in the inbox and big.bin left out", m.Attachments)
	}
	if data, err := os.ReadFile(m.Attachments[0].Path); err != nil || string(data) != "hello" {
		t.Errorf("saved attachment = %q, %v", data, err)
	}

	fake.Post(discordtest.UserMessage{Channel: "dm1", User: "u1", Content: "/stop"})
	if m := rec.next(t); !m.DM || m.Text != "/stop" || m.Workspace != "" {
		t.Errorf("DM = %+v", m)
	}

	rec.none(t, func() {
		fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u2", Content: "chatter without a mention"})
		fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "b1", Bot: true, Content: "<@" + bot + "> hi", Mentions: []string{bot}})
		fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: bot, Content: "<@" + bot + "> me", Mentions: []string{bot}})
		// A message after the ignored ones proves they were handled (in order) and dropped.
		fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1", Content: "<@!" + bot + "> last", Mentions: []string{bot}})
		if m := rec.next(t); m.Text != "last" {
			t.Fatalf("got %q, want the last message", m.Text)
		}
	})
}

func TestSlashCommandsAreDeferredAtOnce(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	rec := make(recorder, 8)
	startAdapter(t, fake, Options{}, rec)
	tests := []struct {
		slash   discordtest.Slash
		text    string
		private bool
	}{
		{discordtest.Slash{Name: "ask", Options: []discordtest.Option{{Name: "prompt", Value: "how do the tests run?"}}}, "how do the tests run?", false},
		{discordtest.Slash{Name: "status"}, "/status", true},
		{discordtest.Slash{Name: "engine", Options: []discordtest.Option{{Name: "name", Value: "cursor"}}}, "/engine cursor", true},
		// Options read in the order the command defines them, not as filled in.
		{discordtest.Slash{Name: "allow", Options: []discordtest.Option{{Name: "for", Value: "session"}, {Name: "id", Value: "a1"}}}, "/allow a1 session", true},
	}
	for _, tt := range tests {
		tt.slash.Channel, tt.slash.Guild, tt.slash.User = "c1", "g1", "u1"
		id := fake.Command(tt.slash)
		m := rec.next(t)
		if m.ID != id || m.EventID != id || m.Text != tt.text || !m.Mentioned || m.User != "u1" {
			t.Errorf("/%s: message = %+v", tt.slash.Name, m)
		}
		in, _ := fake.Interaction(id)
		if in.Callback != 5 || (in.CallbackFlags&64 != 0) != tt.private {
			t.Errorf("/%s: callback type %d flags %d; want deferred, ephemeral=%v", tt.slash.Name, in.Callback, in.CallbackFlags, tt.private)
		}
	}
}

// TestGatewayRecovers: after each way a connection ends (op 7, a dropped
// socket, a zombie connection whose heartbeats go unanswered, op 9 with
// d=true) the adapter resumes the session once, on its resume_gateway_url,
// with one socket open, and the messages sent while it was away are
// replayed and reach the handler each once and in order; after op 9 with
// d=false it identifies once afresh and hears what comes next.
func TestGatewayRecovers(t *testing.T) {
	// A heartbeat every second: a gateway goroutine held up for longer than
	// an interval (a loaded machine) reads the ACK late and resumes once
	// more than the test counts.
	fake := newFake(t, discordtest.Options{HeartbeatInterval: time.Second})
	rec := make(recorder, 16)
	a := newAdapter(t, fake, Options{})
	a.identifyWait = 50 * time.Millisecond // Discord's 1 to 5 s, shortened
	a.flapWait = 10 * time.Millisecond     // each break comes right after the last recovery
	startAdapterWith(t, fake, a, rec)
	bot := fake.Options().BotUserID
	post := func(text string) {
		fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1", Content: "<@" + bot + "> " + text, Mentions: []string{bot}})
	}
	counts := func() (identifies, resumes int) {
		fake.Wait(wait, func(v discordtest.View) bool { identifies, resumes = v.Identifies(), v.Resumes(); return true })
		return
	}
	for _, tt := range []struct {
		name   string
		break_ func()
	}{
		{"op 7", fake.Reconnect},
		{"dropped socket", fake.Drop},
		{"zombie", fake.Zombie},
		{"op 9 resumable", fake.InvalidResumable},
		{"close 4000", func() { fake.CloseWith(4000) }},
	} {
		identifies, resumes := counts()
		tt.break_()
		for i := 1; i <= 3; i++ {
			post(fmt.Sprintf("after %s %d", tt.name, i)) // kept while the client is away: replayed on RESUME
		}
		for i := 1; i <= 3; i++ {
			if m, want := rec.next(t), fmt.Sprintf("after %s %d", tt.name, i); m.Text != want {
				t.Fatalf("%s: got %q, want %q", tt.name, m.Text, want)
			}
		}
		if !fake.Wait(wait, func(v discordtest.View) bool {
			return v.Connected() && v.Sockets() == 1 && v.Resumes() == resumes+1 && v.Identifies() == identifies
		}) {
			i, r := counts()
			t.Fatalf("%s: %d RESUMEs and %d IDENTIFYs, want one RESUME and no IDENTIFY", tt.name, r-resumes, i-identifies)
		}
	}
	for _, tt := range []struct {
		name   string
		break_ func()
	}{
		{"op 9", fake.InvalidSession},
		{"close 4009", func() { fake.CloseWith(4009) }},
	} {
		identifies, resumes := counts()
		tt.break_()
		if !fake.Wait(wait, func(v discordtest.View) bool {
			return v.Connected() && v.Sockets() == 1 && v.Identifies() == identifies+1 && v.Resumes() == resumes
		}) {
			i, r := counts()
			t.Fatalf("after %s: %d IDENTIFYs and %d RESUMEs, want one IDENTIFY", tt.name, i-identifies, r-resumes)
		}
		post("after " + tt.name)
		if m := rec.next(t); m.Text != "after "+tt.name {
			t.Fatalf("after %s: got %q", tt.name, m.Text)
		}
	}
	post("last")
	if m := rec.next(t); m.Text != "last" {
		t.Fatalf("got %q, want the last message: a replayed one came twice", m.Text)
	}
}

// TestGatewayBacksOffAConnectionThatDropsAtOnce: a gateway that drops each
// connection right after its READY or RESUMED, over and over, is dialled
// again after waits that double (flapWait, then twice, four and eight
// times as long), not in a tight loop; the connection that stays serves.
func TestGatewayBacksOffAConnectionThatDropsAtOnce(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	const flaps = 4
	fake.Flap(flaps)
	rec := make(recorder, 1)
	a := newAdapter(t, fake, Options{})
	a.flapWait = 100 * time.Millisecond // Discord's 1 s, shortened
	startAdapterWith(t, fake, a, rec)
	var readies []time.Time
	if !fake.Wait(wait, func(v discordtest.View) bool { readies = v.Readies(); return len(readies) > flaps && v.Connected() }) {
		t.Fatalf("%d connections; want %d dropped and one that stays", len(readies), flaps+1)
	}
	fake.Wait(wait, func(v discordtest.View) bool {
		if n := len(v.Readies()); n != flaps+1 {
			t.Errorf("%d connections, want %d: one after each drop", n, flaps+1)
		}
		return true
	})
	for i := 1; i <= flaps; i++ {
		gap, least := readies[i].Sub(readies[i-1]), a.flapWait<<(i-1)
		t.Logf("connection %d came %v after the one before", i+1, gap)
		if gap < least {
			t.Errorf("connection %d came %v after the one before dropped, want at least %v", i+1, gap, least)
		}
	}
	bot := fake.Options().BotUserID
	fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1", Content: "<@" + bot + "> still here", Mentions: []string{bot}})
	if m := rec.next(t); m.Text != "still here" {
		t.Fatalf("got %q", m.Text)
	}
}

// TestStartEndsWhenRefusedLater: a close with 4004 after the bot was
// connected ends Start with the error instead of reconnecting.
func TestStartEndsWhenRefusedLater(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	a := newAdapter(t, fake, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, make(recorder, 1)) }()
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Connected() }) {
		t.Fatal("not connected")
	}
	fake.CloseWith(4004)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "4004") {
		t.Errorf("Start = %v, want the token rejected (4004)", err)
	}
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Sockets() == 0 && v.Identifies() == 1 }) {
		t.Error("the adapter connected again after 4004")
	}
}

func TestStartFailsForABadToken(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	a, err := New(Options{Token: "wrong", APIURL: fake.URL(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = a.Start(ctx, make(recorder, 1))
	if err == nil || !strings.Contains(err.Error(), "4004") {
		t.Errorf("Start = %v, want the token rejected (4004)", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	for _, opts := range []Options{{}, {Token: "t", APIURL: "ftp://x"}, {Token: "t", APIURL: "::"}} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) = nil error", opts)
		}
	}
}

// TestActivityThreadsAreBounded: the threads remembered by answer are
// forgotten at maxThreads, and an answer still running finds its thread
// again (Discord answers 160004) rather than losing its activity.
func TestActivityThreadsAreBounded(t *testing.T) {
	fake := newFake(t, discordtest.Options{ChannelLimit: 1000})
	a := startAdapter(t, fake, Options{ChannelLimit: 1000}, make(recorder, 8))
	ctx := context.Background()
	ref, err := a.Send(ctx, core.Place{Channel: "c1"}, "answer")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SendActivity(ctx, ref, "first tool"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	for i := range maxThreads {
		a.threads[fmt.Sprint("old", i)] = fmt.Sprint("thread", i)
	}
	a.mu.Unlock()
	other, err := a.Send(ctx, core.Place{Channel: "c1"}, "another answer")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SendActivity(ctx, other, "its tool"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	n := len(a.threads)
	a.mu.Unlock()
	if n > 2 {
		t.Errorf("%d threads remembered after the bound, want the old ones forgotten", n)
	}
	if err := a.SendActivity(ctx, ref, "second tool"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range fake.Messages(ref.ID) {
		got = append(got, m.Content)
	}
	if strings.Join(got, "|") != "first tool|second tool" {
		t.Errorf("the first answer's thread holds %q, want both tools", got)
	}
	if n := len(fake.Messages("c1")); n != 2 {
		t.Errorf("channel c1 has %d messages, want the two answers only", n)
	}
}
