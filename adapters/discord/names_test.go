package discord

import (
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
)

// TestChannelName: a channel's name comes from GET /channels/{id} in the
// background, once; a channel Discord does not know stays unnamed.
func TestChannelName(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	w.fake.NameChannel("c1", "golem-dev")
	if got := w.a.ChannelName("c1"); got != "" {
		t.Errorf("the first call answered %q before asking", got)
	}
	// The name is learned off the fake (its Wait sees no change): poll.
	deadline := time.Now().Add(wait)
	for w.a.ChannelName("c1") != "golem-dev" {
		if time.Now().After(deadline) {
			t.Fatal("the channel's name was never learned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(w.fake.Calls("GET /channels/c1")); n != 1 {
		t.Errorf("the name was asked %d times, want once", n)
	}
	w.a.ChannelName("c9")
	for len(w.fake.Calls("GET /channels/c9")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("c9 was not asked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := w.a.ChannelName("c9"); got != "" {
		t.Errorf("an unknown channel is named %q", got)
	}
}
