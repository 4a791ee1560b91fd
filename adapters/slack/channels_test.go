package slack

import (
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

// TestChannelName: a channel's name comes from conversations.info in the
// background, once; a DM asks nothing; without the scope the channel
// stays unnamed and is not asked again at once.
func TestChannelName(t *testing.T) {
	var a *Adapter
	b := newE2E(t, botConfig{adapter: func(ad *Adapter) { a = ad }})
	b.fake.AddChannel("C1", "eng-golem")
	if got := a.ChannelName("C1"); got != "" {
		t.Errorf("the first call answered %q before asking", got)
	}
	if !b.fake.Wait(10*time.Second, func() bool { return a.ChannelName("C1") == "eng-golem" }) {
		t.Fatal("the channel's name was never learned")
	}
	a.ChannelName("C1")
	if n := len(b.fake.Calls("conversations.info")); n != 1 {
		t.Errorf("conversations.info called %d times, want once", n)
	}
	if a.ChannelName("D1") != "" || len(b.fake.Calls("conversations.info")) != 1 {
		t.Error("a DM was asked its name")
	}
	scopes := []string{}
	for _, s := range slacktest.DefaultScopes {
		if s != "channels:read" {
			scopes = append(scopes, s)
		}
	}
	b.fake.SetScopes(scopes...)
	b.fake.AddChannel("C2", "other")
	a.ChannelName("C2")
	if !b.fake.Wait(10*time.Second, func() bool { return len(b.fake.Calls("conversations.info")) == 2 }) {
		t.Fatal("C2 was not asked")
	}
	if got := a.ChannelName("C2"); got != "" {
		t.Errorf("without channels:read the name is %q", got)
	}
	if n := len(b.fake.Calls("conversations.info")); n != 2 {
		t.Errorf("a refused channel was asked again at once (%d calls)", n)
	}
}
