package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
)

// deferTimeout bounds the deferral of an interaction: Discord wants the
// first response within 3 s.
const deferTimeout = 2500 * time.Millisecond

// running returns the handler, its context and the bot's user id (empty
// before READY); nil handler and context once stopped.
func (a *Adapter) running() (core.Handler, context.Context, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped || a.handler == nil {
		return nil, nil, ""
	}
	return a.handler, a.life, a.botID
}

// pendingKey is where, in Options.State, the messages and slash commands
// taken from the gateway but not yet handed to the handler are kept.
const pendingKey = "discord.pending"

// messageID is the journal's id of a message (or a journaledCommand): its
// id, also its EventID.
func messageID(raw json.RawMessage) string {
	var head struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &head)
	return head.ID
}

// replay hands on the messages and slash commands the last run journaled,
// oldest first, at the first READY (the bot's id known, no MESSAGE_CREATE
// taken yet); their attachments are downloaded anew. Those that had reached the handler just
// before golem stopped are dropped there as duplicates of their event id.
func (a *Adapter) replay() {
	a.journal.Replay(a.handOn("handing on a message taken before the restart"))
}

// adoptGone hands on what the replicas gone from the cluster left in their
// journals (see journal.Adopt), at each READY or RESUMED of a leader, on
// the gateway's goroutine.
func (a *Adapter) adoptGone() {
	if a.opts.Replica == nil || a.opts.JournalOf == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	names, err := a.opts.Replica.Gone(ctx)
	cancel()
	if err != nil {
		a.log.Warn("the replicas gone from the cluster are not known; their journals wait for the next leader", "err", err)
		return
	}
	for _, name := range names {
		if n := a.journal.Adopt(a.opts.JournalOf(name), a.handOn("handing on a message a replica gone from the cluster had taken")); n > 0 {
			a.log.Info("handed on the journal of a replica gone from the cluster", "replica", name, "messages", n)
		}
	}
}

// handOn hands on one journaled message or slash command, saying so in
// the log.
func (a *Adapter) handOn(say string) func(raw json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var cmd journaledCommand
		if json.Unmarshal(raw, &cmd) == nil && cmd.Interaction != nil {
			a.log.Info(say, "interaction", cmd.ID)
			return a.replayCommand(cmd, raw)
		}
		var m discordgo.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			a.log.Error("a journaled message that cannot be decoded dropped", "err", err)
			return false
		}
		a.log.Info(say, "message_id", m.ID)
		return a.take(&m)
	}
}

// take turns a message that is addressed to the bot (a DM, an @mention,
// or a reply to one of its messages) into a core.Message. The bot's own
// messages, other bots', webhooks' and system messages are ignored, and so
// is guild chatter that does not address the bot: it never reaches the
// agent. A message with no attachment and nothing before it in its lane
// goes to the handler at once (Handle does not block); any other is
// journaled before the gateway goes on (Discord does not send a message
// again once its sequence has passed), prepared on a goroutine of its own
// and struck once handed on. take reports whether m is to stay in the
// journal (Replay strikes the others). Called on the gateway's goroutine
// only, in the order events come.
func (a *Adapter) take(m *discordgo.Message) bool {
	_, _, botID := a.running()
	if botID == "" || m.Author == nil || m.Author.ID == botID || m.Author.Bot || m.WebhookID != "" {
		return false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return false
	}
	a.nicks.saw(m) // also from chatter not addressed to the bot, which a context may quote
	dm := m.GuildID == ""
	mentioned := false
	for _, u := range m.Mentions {
		if u != nil && u.ID == botID {
			mentioned = true
		}
	}
	if r := m.ReferencedMessage; r != nil && r.Author != nil && r.Author.ID == botID {
		mentioned = true
	}
	if !dm && !mentioned {
		return false
	}
	if dm {
		a.mu.Lock()
		a.flat[m.ChannelID] = true
		a.mu.Unlock()
	} else {
		a.asked.put(m) // History reads its reply and its author's nickname
	}
	text := strings.NewReplacer("<@"+botID+">", "", "<@!"+botID+">", "").Replace(m.Content)
	msg := core.Message{
		EventID: m.ID, Platform: "discord", Workspace: m.GuildID, Channel: m.ChannelID, ID: m.ID,
		User: m.Author.ID, UserName: m.Author.Username, Text: strings.TrimSpace(text),
		Mentioned: mentioned, DM: dm,
	}
	atts := m.Attachments
	h, ctx, _ := a.running()
	if h == nil {
		return true // stopped: a replayed message stays in the journal
	}
	if len(atts) > 0 && !core.Admitted(h, msg) {
		atts = nil // a stranger's files are not fetched: the message is refused
	}
	var prepare func(*core.Message) bool
	if len(atts) > 0 {
		prepare = func(msg *core.Message) bool {
			a.attach(msg, atts)
			return ctx.Err() == nil // cut short: it stays in the journal
		}
	}
	raw, _ := json.Marshal(m) // journaled only if it cannot go at once
	return a.in.Take(msg, m.ID, raw, true, nil, prepare)
}

// attach saves a message's attachments into the inbox and puts them on m.
// A file that is not saved (over the inbox's limit, a failed download, no
// inbox configured) is named in a note appended to m.Text, so the agent and
// the user learn of it instead of losing it silently.
func (a *Adapter) attach(m *core.Message, atts []*discordgo.MessageAttachment) {
	limit := a.opts.Inbox.MaxBytes
	if limit <= 0 {
		limit = 20 << 20
	}
	_, life, _ := a.running()
	var notes []string
	for _, att := range atts {
		if att == nil || att.URL == "" {
			continue
		}
		var (
			saved core.Attachment
			err   error
		)
		switch {
		case a.opts.Inbox.Dir == "":
			err = errors.New("no inbox folder configured")
		case int64(att.Size) > limit:
			err = fmt.Errorf("%w: %d bytes", core.ErrTooLarge, att.Size)
		case life == nil:
			err = errors.New("the adapter stopped")
		default:
			saved, err = a.fetch(life, att)
		}
		if err != nil {
			a.log.Warn("attachment not saved", "size", att.Size, "limit", limit, "err", err)
			notes = append(notes, core.NotSaved(att.Filename, err))
			continue
		}
		m.Attachments = append(m.Attachments, saved)
	}
	if len(notes) > 0 {
		m.Text = strings.TrimSpace(m.Text + "\n\n" + strings.Join(notes, "\n"))
	}
}

func (a *Adapter) fetch(ctx context.Context, att *discordgo.MessageAttachment) (core.Attachment, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, att.URL, nil)
	if err != nil {
		return core.Attachment{}, fmt.Errorf("discord: download attachment: %w", err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return core.Attachment{}, fmt.Errorf("discord: download attachment: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return core.Attachment{}, fmt.Errorf("discord: download attachment: HTTP %s", resp.Status)
	}
	return a.opts.Inbox.Save(att.Filename, resp.Body)
}
