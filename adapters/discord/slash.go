package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
)

// journaledCommand is a slash command as the journal keeps it: the
// interaction as the gateway sent it, and when it came, which tells a
// later start whether its token may still answer (Discord's live 15
// minutes from the interaction). Its id is the interaction's, as the
// message's is a message's.
type journaledCommand struct {
	ID          string          `json:"id"`
	Interaction json.RawMessage `json:"slash_command"`
	Received    time.Time       `json:"received"`
}

// onInteraction answers a slash command: it defers the interaction at once
// (ephemerally for every command but /ask, whose answer is public), then
// hands "/name args" (or /ask's prompt) to the handler, in its channel's
// order. One that waits behind a message whose attachments download is
// journaled first (raw is the gateway's payload), so that a restart
// meanwhile hands it on too (see replayCommand). Called on the gateway's
// goroutine.
func (a *Adapter) onInteraction(in *discordgo.Interaction, raw json.RawMessage) {
	if in.Type == discordgo.InteractionMessageComponent {
		a.onComponent(in)
		return
	}
	now := time.Now()
	st, msg, ok := a.command(in, now)
	if !ok {
		return
	}
	var kept json.RawMessage
	if a.in.Waits(msg) {
		kept, _ = json.Marshal(journaledCommand{ID: in.ID, Interaction: raw, Received: now})
	}
	a.in.Take(msg, in.ID, kept, true, nil, func(*core.Message) bool {
		a.deferInteraction(st)
		return true
	})
}

// command reads a slash command received at received into its response
// state, known to the adapter from then on, and the message it hands on.
// ok is false for what is not a user's slash command.
func (a *Adapter) command(in *discordgo.Interaction, received time.Time) (_ *interaction, _ core.Message, ok bool) {
	if in.Type != discordgo.InteractionApplicationCommand {
		return nil, core.Message{}, false
	}
	user := clicker(in)
	if user == nil || user.Bot {
		return nil, core.Message{}, false
	}
	data, ok := in.Data.(discordgo.ApplicationCommandInteractionData)
	if !ok {
		return nil, core.Message{}, false
	}
	args := orderedArgs(data)
	text := "/" + data.Name
	if len(args) > 0 {
		text += " " + strings.Join(args, " ")
	}
	private := data.Name != "ask"
	if !private {
		text = strings.Join(args, " ")
	}
	life := a.opts.TokenLife
	st := &interaction{in: in, private: private, expires: received.Add(life - min(time.Minute, life/10))}
	a.mu.Lock()
	a.interactions[in.ID] = st
	if in.GuildID == "" {
		a.flat[in.ChannelID] = true
	}
	a.pruneLocked()
	a.mu.Unlock()
	return st, core.Message{
		EventID: in.ID, Platform: "discord", Workspace: in.GuildID, Channel: in.ChannelID, ID: in.ID,
		User: user.ID, UserName: user.Username, Text: strings.TrimSpace(text),
		Mentioned: true, DM: in.GuildID == "",
	}, true
}

// replayCommand hands on a slash command the last run journaled (it waited
// behind a download when golem stopped), in its channel's order. Its
// response is found again where the token still works: the deferral the
// last run made (@original), or a deferral now while Discord still takes
// one (3 s from the interaction). Where neither works — the token is past
// its 15 minutes, or the interaction was never acknowledged in time — the
// answer goes to the channel as a bot message instead (Send, ReplyPrivately
// see an interaction that cannot answer). It reports whether the command
// stays in the journal.
func (a *Adapter) replayCommand(j journaledCommand, raw json.RawMessage) bool {
	var in discordgo.Interaction
	if err := json.Unmarshal(j.Interaction, &in); err != nil {
		a.log.Error("a journaled slash command that cannot be decoded dropped", "err", err)
		return false
	}
	st, msg, ok := a.command(&in, j.Received)
	if !ok {
		return false
	}
	return a.in.Take(msg, in.ID, raw, true, nil, func(*core.Message) bool {
		a.resumeInteraction(st)
		return true
	})
}

// resumeInteraction finds the response of a slash command taken before a
// restart: the deferred response the last run made, read back through the
// token while it lives, or else a deferral now. When neither works st
// stays undeferred, and its answer goes to the channel.
func (a *Adapter) resumeInteraction(st *interaction) {
	_, life, _ := a.running()
	if life == nil {
		return
	}
	if !st.alive() {
		a.log.Info("a slash command taken before the restart is answered in its channel: its token has expired", "interaction", st.in.ID)
		return
	}
	ctx, cancel := context.WithTimeout(life, deferTimeout)
	defer cancel()
	var orig *discordgo.Message
	err := a.call(ctx, "", "read deferred response", func(opts ...discordgo.RequestOption) error {
		var err error
		orig, err = a.session.InteractionResponse(st.in, opts...)
		return err
	})
	if err == nil {
		st.mu.Lock()
		st.deferred, st.original = true, orig.ID
		st.mu.Unlock()
		return
	}
	if isExpired(err) {
		st.mu.Lock()
		st.expired = true
		st.mu.Unlock()
		a.log.Info("a slash command taken before the restart is answered in its channel: Discord refused its token", "interaction", st.in.ID)
		return
	}
	a.deferInteraction(st) // it had not been deferred: Discord may still take it
	st.mu.Lock()
	deferred := st.deferred
	st.mu.Unlock()
	if !deferred {
		a.log.Info("a slash command taken before the restart is answered in its channel: Discord no longer takes its response", "interaction", st.in.ID)
	}
}

// orderedArgs returns a slash command's option values in the order the
// command defines its options, whatever order the user filled them in, so
// that "/allow ID session" reads as typed.
func orderedArgs(data discordgo.ApplicationCommandInteractionData) []string {
	given := map[string]string{}
	for _, o := range data.Options {
		if o != nil && o.Value != nil {
			given[o.Name] = fmt.Sprint(o.Value)
		}
	}
	var args []string
	for _, c := range commands() {
		if c.Name != data.Name {
			continue
		}
		for _, o := range c.Options {
			if v, ok := given[o.Name]; ok {
				args = append(args, v)
			}
		}
	}
	return args
}

func (a *Adapter) deferInteraction(st *interaction) {
	_, life, _ := a.running()
	if life == nil {
		return
	}
	ctx, cancel := context.WithTimeout(life, deferTimeout)
	defer cancel()
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}
	if st.private {
		resp.Data = &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}
	}
	err := a.call(ctx, "", "defer interaction", func(opts ...discordgo.RequestOption) error {
		err := a.session.InteractionRespond(st.in, resp, opts...)
		if code, _ := apiCode(err); code == 40060 {
			return nil // "already acknowledged": a repeat of this deferral, which failed late but landed
		}
		return err
	})
	st.mu.Lock()
	st.deferred = err == nil
	st.mu.Unlock()
	if err != nil {
		a.log.Warn("defer interaction", "err", err)
	}
}
