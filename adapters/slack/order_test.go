package slack

import (
	"testing"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/internal/nettest"
)

// A file that takes long to download holds up the later messages of its
// channel, slash commands included, and keeps their order; /stop is not
// held up by it, nor is another channel.
func TestSlowDownloadHoldsOnlyItsChannelAndNotStop(t *testing.T) {
	net := nettest.NewStall("/files-pri/")
	fake, _, rec := startAdapter(t, slacktest.Options{}, func(o *Options) { o.HTTPClient = net.Client() })
	f := fake.AddFile("a.txt", "text/plain", []byte("abc"))
	dm := func(channel, text string) slacktest.Event {
		return slacktest.Event{Type: "message", ChannelType: "im", User: "U1", Channel: channel, Text: text}
	}
	net.Hold()
	withFile := dm("D1", "see the file")
	withFile.SubType, withFile.Files = "file_share", []map[string]any{f}
	deliver(t, fake, withFile)
	net.WaitHeld(t, 1)
	deliver(t, fake, dm("D1", "and fix it"))
	if _, err := fake.SlashCommand("U1", "D1", "/golem", "status"); err != nil {
		t.Fatal(err)
	}
	deliver(t, fake, dm("D1", "/stop"))
	deliver(t, fake, dm("D2", "elsewhere"))
	for _, want := range []string{"/stop", "elsewhere"} { // while the download hangs
		if m := rec.next(t); m.Text != want {
			t.Fatalf("got %q while the download hangs, want %q", m.Text, want)
		}
	}
	net.Release()
	for _, want := range []string{"see the file", "and fix it", "/status"} {
		m := rec.next(t)
		if m.Text != want {
			t.Fatalf("got %q, want %q", m.Text, want)
		}
		if want == "see the file" && len(m.Attachments) != 1 {
			t.Errorf("the file's message has attachments %+v", m.Attachments)
		}
	}
}
