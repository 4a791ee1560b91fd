package discord

import (
	"testing"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/nettest"
)

// An attachment that takes long to download holds up the later messages of
// its channel and keeps their order; /stop is not held up by it, nor is
// another channel.
func TestSlowDownloadHoldsOnlyItsChannelAndNotStop(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	rec := make(recorder, 8)
	a, err := New(Options{Token: fake.Options().BotToken, APIURL: fake.URL(), Logger: testLogger(),
		Inbox: core.Inbox{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	net := nettest.NewStall("/attachments/")
	a.http = net.Client()
	startAdapterWith(t, fake, a, rec)
	bot := fake.Options().BotUserID
	say := func(channel, text string, atts ...discordtest.Attachment) {
		fake.Post(discordtest.UserMessage{Channel: channel, Guild: "g1", User: "u1", Content: "<@" + bot + "> " + text,
			Mentions: []string{bot}, Attachments: atts})
	}

	net.Hold()
	say("c1", "see the file", discordtest.Attachment{Name: "a.txt", Data: []byte("abc")})
	net.WaitHeld(t, 1)
	say("c1", "and fix it")
	fake.Command(discordtest.Slash{Name: "stop", Channel: "c1", Guild: "g1", User: "u1"})
	say("c2", "elsewhere")
	got := map[string]bool{}
	for range 2 { // while the download hangs, in either order (/stop is deferred first)
		got[rec.next(t).Text] = true
	}
	if !got["/stop"] || !got["elsewhere"] {
		t.Fatalf("got %v while the download hangs, want /stop and the other channel's message", got)
	}
	net.Release()
	for _, want := range []string{"see the file", "and fix it"} {
		m := rec.next(t)
		if m.Text != want {
			t.Fatalf("got %q, want %q", m.Text, want)
		}
		if want == "see the file" && len(m.Attachments) != 1 {
			t.Errorf("the file's message has attachments %+v", m.Attachments)
		}
	}
}

// A click's answer that Discord is slow to take holds up neither the
// gateway (a message sent meanwhile reaches the handler while it is held)
// nor the clicks on another message; the clicks on one message are
// answered in the order they came.
func TestSlowClickAnswerHoldsUpOnlyItsMessage(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	rec := make(recorder, 8)
	startAdapter(t, fake, Options{}, rec)
	hold := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	t.Cleanup(release)
	fake.Fail("POST /interactions/", 1, discordtest.Failure{Until: hold})
	click := func(message string) string {
		return fake.Click(discordtest.Click{Guild: "g1", Channel: "c1", Message: message, User: "u1", CustomID: "golem:allow:12345678"})
	}
	first := click("q1")
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Holding() == 1 }) {
		t.Fatal("the first click's answer was not held")
	}
	second, other := click("q1"), click("q2")
	bot := fake.Options().BotUserID
	fake.Post(discordtest.UserMessage{Channel: "c2", Guild: "g1", User: "u1", Content: "<@" + bot + "> meanwhile", Mentions: []string{bot}})
	if m := rec.next(t); m.Text != "meanwhile" {
		t.Fatalf("got %q, want the message sent meanwhile", m.Text)
	}
	fake.Wait(wait, func(v discordtest.View) bool {
		if v.Holding() != 1 {
			t.Error("the message sent meanwhile reached the handler only once the held click's answer was given up")
		}
		return true
	})
	answered := func(v discordtest.View, id string) bool { in, _ := v.Interaction(id); return in.Callback != 0 }
	if !fake.Wait(wait, func(v discordtest.View) bool { return answered(v, other) }) {
		t.Fatal("the click on another message was not answered while the first was held")
	}
	fake.Wait(wait, func(v discordtest.View) bool {
		if v.Holding() != 1 || answered(v, second) {
			t.Errorf("while the first click's answer was held: held %d, the second click on its message answered %v; want 1, false",
				v.Holding(), answered(v, second))
		}
		return true
	})
	release()
	if !fake.Wait(wait, func(v discordtest.View) bool { return answered(v, first) && answered(v, second) }) {
		t.Fatal("the clicks on the first message were not answered once Discord took them")
	}
	a, _ := fake.Interaction(first)
	b, _ := fake.Interaction(second)
	if b.CallbackAt.Before(a.CallbackAt) {
		t.Errorf("the second click on a message was answered at %v, before the first (%v)", b.CallbackAt, a.CallbackAt)
	}
}
