package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
)

var _ core.ChannelNamer = (*Adapter)(nil)

// ChannelName implements core.ChannelNamer: the channel's name from the
// cache, else "" while GET /channels/{id} asks Discord in the background
// (see namecache). A DM has no name.
func (a *Adapter) ChannelName(channel string) string {
	if channel == "" {
		return ""
	}
	return a.names.Name(channel)
}

// channelName asks Discord for a channel's name.
func (a *Adapter) channelName(ctx context.Context, channel string) (string, error) {
	var ch *discordgo.Channel
	err := a.call(ctx, "", "read a channel", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = a.session.Channel(channel, opts...)
		return err
	})
	if err != nil {
		a.log.Debug("discord: read a channel's name for the operator's view", "channel", channel, "err", err)
		return "", err
	}
	return ch.Name, nil
}
