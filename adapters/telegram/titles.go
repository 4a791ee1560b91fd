package telegram

import (
	"sync"

	"github.com/golem-chat/golem/core"
)

var _ core.ChannelNamer = (*Adapter)(nil)

// maxTitles bounds the group titles kept; past it they are forgotten and
// learned again from the next messages.
const maxTitles = 10000

// titles are the groups' titles as their messages carry them, by chat id.
type titles struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *titles) put(chat, title string) {
	if title == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTitles && t.m[chat] == "" {
		t.m = map[string]string{}
	}
	t.m[chat] = title
}

// ChannelName implements core.ChannelNamer: a group's title as its last
// message to golem carried it, "" for a private chat and for a group not
// heard from since golem started.
func (a *Adapter) ChannelName(channel string) string {
	a.titles.mu.Lock()
	defer a.titles.mu.Unlock()
	return a.titles.m[channel]
}
