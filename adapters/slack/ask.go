package slack

import (
	"context"
	"fmt"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

var _ core.Asker = (*Adapter)(nil)

// maxSection is what a Block Kit section's text may hold.
const maxSection = 3000

// Ask implements core.Asker: a Block Kit message in the answer's thread (or
// at its place): a section with what the agent wants to do, then one button
// per choice, whose action_id and value are the Choice's Data. The text
// fallback is the same question.
func (a *Adapter) Ask(ctx context.Context, q core.Question) (core.MessageRef, error) {
	channel, thread := q.Place.Channel, q.Place.Thread
	if q.Answer.ID != "" {
		channel, thread = q.Answer.Channel, q.Answer.Thread
		if thread == "" {
			thread = q.Answer.ID
		}
	} else if thread == "" && q.Place.StartThread {
		thread = q.Place.ReplyTo
	}
	var buttons []slackapi.BlockElement
	for _, c := range q.Choices {
		b := slackapi.NewButtonBlockElement(c.Data, c.Data, slackapi.NewTextBlockObject(slackapi.PlainTextType, c.Label, false, false))
		switch c.Style {
		case "primary":
			b.Style = slackapi.StylePrimary
		case "danger":
			b.Style = slackapi.StyleDanger
		}
		buttons = append(buttons, b)
	}
	blocks := slackapi.MsgOptionBlocks(section(q.Text), slackapi.NewActionBlock("golem-question", buttons...))
	ts, err := a.post(ctx, channel, thread, q.Text, blocks)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("slack: post a question: %w", err)
	}
	if thread != "" {
		a.toolDone(channel, thread) // the question, which cleared the status, says what waits
	}
	return core.MessageRef{Channel: channel, Thread: thread, ID: ts}, nil
}

// Settle implements core.Asker: the question becomes text, its buttons
// gone (its blocks are replaced by one section).
func (a *Adapter) Settle(ctx context.Context, question core.MessageRef, text string) error {
	call := retry.Call{Method: "chat.update", Idempotent: true, RateLimited: a.updates.pause,
		Before: func(ctx context.Context) (func(), error) { return nil, a.updates.wait(ctx) }}
	err := a.retry.Do(ctx, call, func(ctx context.Context) error {
		_, _, _, err := a.api.UpdateMessageContext(ctx, question.Channel, question.ID,
			slackapi.MsgOptionText(render(text), false), slackapi.MsgOptionBlocks(section(text)))
		return err
	})
	if err != nil {
		return fmt.Errorf("slack: settle a question: %w", err)
	}
	return nil
}

// section is markdown as a Block Kit section (Slack's mrkdwn, mentions
// neutralized like every text the adapter posts).
func section(markdown string) *slackapi.SectionBlock {
	text := render(markdown)
	if r := []rune(text); len(r) > maxSection {
		text = string(r[:maxSection-1]) + "…"
	}
	return slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, text, false, false), nil, nil)
}

// onInteractive takes a block_actions envelope (already acked): the click
// is decided at once; then, off the socket's goroutine, a deciding click
// updates the question to its outcome and a refused one is answered to
// the clicker alone (chat.postEphemeral).
func (a *Adapter) onInteractive(ctx context.Context, h core.Handler, ev socketmode.Event) {
	cb, ok := ev.Data.(slackapi.InteractionCallback)
	if !ok || cb.Type != slackapi.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return
	}
	act := cb.ActionCallback.BlockActions[0]
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	question := core.MessageRef{Channel: channel, Thread: thread, ID: cb.Container.MessageTs}
	res := h.HandleAction(ctx, core.Action{
		EventID: "act:" + cb.Container.MessageTs + ":" + act.ActionTs, Platform: "slack", Workspace: cb.Team.ID,
		Channel: channel, Thread: thread, User: cb.User.ID, UserName: cb.User.Name, Question: question, Data: act.Value,
	})
	go func() {
		if res.Err == nil {
			if err := a.Settle(ctx, question, res.Settled); err != nil {
				a.log.Warn("slack: settle a question", "method", "chat.update", "err", err)
			}
			return
		}
		opts := []slackapi.MsgOption{slackapi.MsgOptionText(render(res.Refusal), false)}
		if thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(thread))
		}
		err := a.do(ctx, "chat.postEphemeral", func(ctx context.Context) error {
			_, err := a.api.PostEphemeralContext(ctx, channel, cb.User.ID, opts...)
			return err
		})
		if err != nil {
			a.log.Warn("slack: refuse a click", "method", "chat.postEphemeral", "err", err)
		}
	}()
}
