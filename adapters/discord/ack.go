package discord

import (
	"context"
	"errors"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
)

var _ core.Acknowledger = (*Adapter)(nil)

// ackReaction marks a message taken into the running answer.
const ackReaction = "👀"

// errNoMessage is Acknowledge's answer for a slash command, which has no
// message to react to: core answers it with a note instead.
var errNoMessage = errors.New("discord: acknowledge: a slash command has no message to react to")

// Acknowledge adds the bot's 👀 reaction to m (PUT
// /channels/{c}/messages/{m}/reactions/👀/@me); adding it again changes
// nothing, so a repeat after a failure is harmless. It takes none of the
// channel's message budget.
func (a *Adapter) Acknowledge(ctx context.Context, m core.Message) error {
	if a.interaction(m.ID) != nil || m.ID == "" {
		return errNoMessage
	}
	return a.call(ctx, "", "reaction", func(opts ...discordgo.RequestOption) error {
		return a.session.MessageReactionAdd(m.Channel, m.ID, ackReaction, opts...)
	})
}
