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
