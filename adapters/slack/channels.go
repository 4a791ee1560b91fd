package slack

import (
	"context"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/core"
)

var _ core.ChannelNamer = (*Adapter)(nil)

// ChannelName implements core.ChannelNamer: the channel's name from the
// cache, else "" while conversations.info is asked in the background (see
// namecache: two at a time, a name kept an hour). A DM has no name.
// Without the channels:read scope (groups:read for a private channel)
// Slack refuses, and the channel stays unnamed for ten minutes.
func (a *Adapter) ChannelName(channel string) string {
	if channel == "" || strings.HasPrefix(channel, "D") {
		return ""
	}
	return a.channels.Name(channel)
}

// channelName asks Slack for a channel's name (conversations.info).
func (a *Adapter) channelName(ctx context.Context, channel string) (string, error) {
	var c *slackapi.Channel
	err := a.do(ctx, "conversations.info", func(ctx context.Context) error {
		var err error
		c, err = a.api.GetConversationInfoContext(ctx, &slackapi.GetConversationInfoInput{ChannelID: channel})
		return err
	})
	if err != nil {
		a.log.Debug("slack: read a channel's name for the operator's view", "channel", channel, "err", withScopeHint(err))
		return "", err
	}
	return c.Name, nil
}
