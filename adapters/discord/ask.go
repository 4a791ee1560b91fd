package discord

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

var _ core.Asker = (*Adapter)(nil)

// Ask implements core.Asker: the question where tool activity goes (the
// answer's thread), with one button per choice in action rows of five;
// a button's custom_id is the Choice's Data.
func (a *Adapter) Ask(ctx context.Context, q core.Question) (core.MessageRef, error) {
	channel, replyTo := q.Place.Channel, q.Place.ReplyTo
	if q.Answer.ID != "" {
		channel, replyTo = a.activityPlace(ctx, q.Answer)
	}
	data := messageCreate{MessageSend: &discordgo.MessageSend{Content: a.render(q.Text), AllowedMentions: noMentions,
		Components: buttons(q.Choices)}, Nonce: newNonce(), EnforceNonce: true}
	if replyTo != "" {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: channel, FailIfNotExists: &no}
	}
	uri := discordgo.EndpointChannelMessages(channel)
	m, err := a.messageRequest(ctx, channel, retry.Call{Method: "post question", Idempotent: true}, http.MethodPost, uri, uri, data)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("discord: post a question: %w", err)
	}
	return core.MessageRef{Channel: channel, ID: m.ID}, nil
}

// Settle implements core.Asker: the question's text becomes text and its
// buttons go.
func (a *Adapter) Settle(ctx context.Context, question core.MessageRef, text string) error {
	content := a.render(text)
	none := []discordgo.MessageComponent{}
	data := &discordgo.MessageEdit{ID: question.ID, Channel: question.Channel, Content: &content,
		Components: &none, AllowedMentions: noMentions}
	err := a.call(ctx, question.Channel, "settle question", func(opts ...discordgo.RequestOption) error {
		_, err := a.session.ChannelMessageEditComplex(data, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("discord: settle a question: %w", err)
	}
	return nil
}

// buttons lays choices out in action rows of at most five buttons.
func buttons(choices []core.Choice) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	var row discordgo.ActionsRow
	for _, c := range choices {
		style := discordgo.SecondaryButton
		switch c.Style {
		case "primary":
			style = discordgo.PrimaryButton
		case "danger":
			style = discordgo.DangerButton
		}
		row.Components = append(row.Components, discordgo.Button{Label: c.Label, Style: style, CustomID: c.Data})
		if len(row.Components) == 5 {
			rows, row = append(rows, row), discordgo.ActionsRow{}
		}
	}
	if len(row.Components) > 0 {
		rows = append(rows, row)
	}
	return rows
}

// onComponent takes a click on a question's button (a type-3
// interaction): decided at once, on the gateway's goroutine, so that
// clicks are decided in the order they came; then answered by updating the
// question to its outcome without buttons (type 7), or, when it decided
// nothing, privately to the clicker (type 4, ephemeral). The answer goes
// off the gateway's goroutine (a slow callback would hold up every event
// behind it), in order per clicked message; see answerClick for Discord's
// 3 s.
func (a *Adapter) onComponent(in *discordgo.Interaction) {
	arrived := time.Now()
	h, life, _ := a.running()
	if h == nil || in.Message == nil {
		return
	}
	user := clicker(in)
	if user == nil || user.Bot {
		return
	}
	data := in.MessageComponentData()
	res := h.HandleAction(life, core.Action{
		EventID: in.ID, Platform: "discord", Workspace: in.GuildID, Channel: in.ChannelID,
		User: user.ID, UserName: user.Username, Data: data.CustomID,
		Question: core.MessageRef{Channel: in.ChannelID, ID: in.Message.ID},
	})
	a.clicks.Put(in.Message.ID, click{in: in, user: user.ID, res: res, arrived: arrived})
}

// click is a decided click, waiting for its answer to Discord.
type click struct {
	in      *discordgo.Interaction
	user    string // the clicker
	res     core.ActionResult
	arrived time.Time // when the gateway gave it: Discord's 3 s run from then
}

// answerClick answers a click; called by Adapter.clicks, one at a time per
// clicked message. Discord takes an interaction's first response only
// within 3 s of the click, so the answer must be made by deferTimeout
// after the click's arrival, however long the clicks before it on the
// same message took. A click that cannot be answered by then (it waited
// too long behind them, or Discord did not take the answer in time) shows
// the clicker "This interaction failed"; its outcome is then shown with
// the bot's token instead (see answerLate).
func (a *Adapter) answerClick(c click) {
	_, life, _ := a.running()
	if life == nil {
		return
	}
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: a.render(c.res.Settled), Components: []discordgo.MessageComponent{},
			AllowedMentions: noMentions}}
	if c.res.Err != nil {
		resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: a.render(c.res.Refusal), Flags: discordgo.MessageFlagsEphemeral,
				AllowedMentions: noMentions}}
	}
	ctx, cancel := context.WithDeadline(life, c.arrived.Add(deferTimeout))
	defer cancel()
	err := a.call(ctx, "", "answer click", func(opts ...discordgo.RequestOption) error {
		err := a.session.InteractionRespond(c.in, resp, opts...)
		if code, _ := apiCode(err); code == 40060 {
			return nil // already acknowledged: a repeat that failed late but landed
		}
		return err
	})
	if err == nil || life.Err() != nil {
		return
	}
	a.log.Warn("a click not answered within Discord's 3 s: its outcome is shown in the channel", "interaction", c.in.ID,
		"waited_ms", time.Since(c.arrived).Milliseconds(), "err", err)
	a.answerLate(life, c)
}

// answerLate shows the outcome of a click Discord no longer takes an answer
// for: the question that it decided is settled by an edit (as Settle does
// for decisions made elsewhere), so it shows its outcome and takes no more
// clicks; a refusal, which can no longer be private, is a reply to the
// question naming the clicker (without pinging), as ReplyPrivately answers
// a message.
func (a *Adapter) answerLate(ctx context.Context, c click) {
	question := core.MessageRef{Channel: c.in.ChannelID, ID: c.in.Message.ID}
	var err error
	if c.res.Err == nil {
		err = a.Settle(ctx, question, c.res.Settled)
	} else {
		_, err = a.channelSend(ctx, question.Channel, question.ID, "<@"+c.user+"> "+a.render(c.res.Refusal))
	}
	if err != nil {
		a.log.Warn("show a late click's outcome", "interaction", c.in.ID, "err", err)
	}
}

// clicker is who made an interaction: a guild member's user, or the user
// of a DM.
func clicker(in *discordgo.Interaction) *discordgo.User {
	if in.Member != nil && in.Member.User != nil {
		return in.Member.User
	}
	return in.User
}
