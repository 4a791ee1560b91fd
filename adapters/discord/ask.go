package discord

import (
	"context"
	"fmt"
	"net/http"

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
// clicks are decided in the order they came; then answered within
// Discord's 3 s by updating the question to its outcome without buttons
// (type 7), or, when it decided nothing, privately to the clicker (type 4,
// ephemeral). The answer goes off the gateway's goroutine (a slow
// callback would hold up every event behind it), in order per clicked
// message.
func (a *Adapter) onComponent(in *discordgo.Interaction) {
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
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: a.render(res.Settled), Components: []discordgo.MessageComponent{},
			AllowedMentions: noMentions}}
	if res.Err != nil {
		resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: a.render(res.Refusal), Flags: discordgo.MessageFlagsEphemeral,
				AllowedMentions: noMentions}}
	}
	a.clicks.Put(in.Message.ID, click{in: in, resp: resp})
}

// click is a decided click and its answer to Discord.
type click struct {
	in   *discordgo.Interaction
	resp *discordgo.InteractionResponse
}

// answerClick sends a click's answer; called by Adapter.clicks, one at a
// time per clicked message.
func (a *Adapter) answerClick(c click) {
	_, life, _ := a.running()
	if life == nil {
		return
	}
	ctx, cancel := context.WithTimeout(life, deferTimeout)
	defer cancel()
	err := a.call(ctx, "", "answer click", func(opts ...discordgo.RequestOption) error {
		err := a.session.InteractionRespond(c.in, c.resp, opts...)
		if code, _ := apiCode(err); code == 40060 {
			return nil // already acknowledged: a repeat that failed late but landed
		}
		return err
	})
	if err != nil {
		a.log.Warn("answer a click", "err", err)
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
