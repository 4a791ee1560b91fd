package telegram

import (
	"context"
	"fmt"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
)

var _ core.Acknowledger = (*Adapter)(nil)

// ackReaction marks a message taken into the running answer; it is one of
// the emoji Telegram lets bots react with.
const ackReaction = `[{"type":"emoji","emoji":"👀"}]`

// Acknowledge sets the bot's 👀 reaction on m (setMessageReaction, Bot API
// 7.0, through raw parameters: the library predates it). Setting it again
// sets the same reaction, so a repeat after a failure is harmless; it
// takes none of a chat's message budget.
func (a *Adapter) Acknowledge(ctx context.Context, m core.Message) error {
	chat, err := parseID(m.Channel)
	if err != nil {
		return fmt.Errorf("telegram: acknowledge: %w", err)
	}
	id, err := strconv.ParseInt(m.ID, 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("telegram: acknowledge: no message to react to")
	}
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(chat, 10), "message_id": strconv.FormatInt(id, 10),
		"reaction": ackReaction}
	if _, err := a.do(ctx, "setMessageReaction", p); err != nil {
		return fmt.Errorf("telegram: acknowledge a message: %w", err)
	}
	return nil
}
