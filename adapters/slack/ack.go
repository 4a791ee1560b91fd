package slack

import (
	"context"
	"fmt"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/core"
)

var _ core.Acknowledger = (*Adapter)(nil)

// ackReaction is the emoji that marks a message taken into the running
// answer (core.Acknowledger).
const ackReaction = "eyes"

// Acknowledge adds the 👀 reaction to m (reactions.add), which stays: the
// message went into the answer that is running. A repeat of an add that
// failed late but landed finds the reaction there, which is success.
func (a *Adapter) Acknowledge(ctx context.Context, m core.Message) error {
	if m.ID == "" || m.Channel == "" {
		return fmt.Errorf("slack: acknowledge: no message to react to")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	item := slackapi.NewRefToMessage(m.Channel, m.ID)
	err := a.do(ctx, "reactions.add", func(ctx context.Context) error {
		return slackOK(a.api.AddReactionContext(ctx, ackReaction, item), "already_reacted")
	})
	if err != nil {
		return fmt.Errorf("slack: acknowledge a message: %w", err)
	}
	return nil
}
