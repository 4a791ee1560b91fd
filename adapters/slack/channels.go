package slack

import (
	"context"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/core"
)

var _ core.ChannelNamer = (*Adapter)(nil)

// channelLookup bounds one conversations.info call, retries included;
// a channel being looked up is not asked again for askingTTL.
const (
	channelLookup = 10 * time.Second
	askingTTL     = 30 * time.Second
)

// ChannelName implements core.ChannelNamer: the channel's name from the
// cache, else "" while conversations.info is asked in the background (two
// at a time; a channel already being asked waits for that answer). A DM
// has no name. Without the channels:read scope (groups:read for a private
// channel) Slack refuses, and the channel stays unnamed for ten minutes.
func (a *Adapter) ChannelName(channel string) string {
	if channel == "" || strings.HasPrefix(channel, "D") {
		return ""
	}
	if name, ok := a.channels.get(channel, time.Now()); ok {
		return name
	}
	select {
	case a.asking <- struct{}{}:
	default:
		return "" // enough lookups under way: a later call asks
	}
	a.channels.put(channel, "", askingTTL)
	go func() {
		defer func() { <-a.asking }()
		ctx, cancel := context.WithTimeout(context.Background(), channelLookup)
		defer cancel()
		var c *slackapi.Channel
		err := a.do(ctx, "conversations.info", func(ctx context.Context) error {
			var err error
			c, err = a.api.GetConversationInfoContext(ctx, &slackapi.GetConversationInfoInput{ChannelID: channel})
			return err
		})
		if err != nil {
			a.channels.put(channel, "", noNameTTL)
			a.log.Debug("slack: read a channel's name for the operator's view", "channel", channel, "err", withScopeHint(err))
			return
		}
		a.channels.put(channel, c.Name, nameTTL)
	}()
	return ""
}
