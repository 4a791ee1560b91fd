package discord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
)

var _ core.Historian = (*Adapter)(nil)

// maxAsked bounds the gateway messages kept for History; one evicted
// costs a GET of the message when its turn comes.
const maxAsked = 1024

// asked keeps the MESSAGE_CREATE objects of messages handed to core, so
// that History reads a reply's first hop (referenced_message) from the
// gateway instead of fetching it, and the author's guild nickname, which
// only the gateway carries.
type asked struct {
	mu    sync.Mutex
	byID  map[string]*discordgo.Message
	order []string
}

func (k *asked) put(m *discordgo.Message) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byID == nil {
		k.byID = map[string]*discordgo.Message{}
	}
	if len(k.order) >= maxAsked {
		delete(k.byID, k.order[0])
		k.order = k.order[1:]
	}
	k.byID[m.ID] = m
	k.order = append(k.order, m.ID)
}

// take returns the message kept for id, and forgets it.
func (k *asked) take(id string) *discordgo.Message {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.byID[id]
	if m != nil {
		delete(k.byID, id)
		k.order = slices.DeleteFunc(k.order, func(x string) bool { return x == id })
	}
	return m
}

// History implements core.Historian: what was said before m in its
// channel (a thread is a channel of its own), at most limit messages,
// oldest first:
//
//   - the chain of messages m replies to, each replying to the next, the
//     first marked Said.RepliedTo: the first hop from the gateway's
//     referenced_message, the others from each fetched message's own
//     referenced_message or a GET of it; it ends at the bot's own message
//     (what came before was put to the bot then), a deleted message, or
//     limit;
//   - the bot's last message in the channel, marked as its own, and the
//     messages since (GET /channels/{id}/messages?before=m), without those
//     addressed to the bot, which are turns of their own; in a thread
//     started on a message that the bot did not post in, that message
//     comes first.
//
// The chain is kept first when both hold more than limit, the newest
// messages of the rest after it. A slash command (/ask) replies to
// nothing, so it gets only the second part, read before the interaction's
// id (a snowflake of when it was run). Both parts are read at once; what
// one of them read is returned even when the other failed, with the error.
// Names are display names (the guild nickname the gateway last showed,
// the global name, the username) and mentions are plain text, so that
// nothing quoted back pings anyone. It is safe for concurrent use.
func (a *Adapter) History(ctx context.Context, m core.Message, limit int) ([]core.Said, error) {
	_, _, botID := a.running()
	if limit <= 0 || botID == "" {
		return nil, nil
	}
	channel := m.Channel
	if m.Thread != "" {
		channel = m.Thread
	}
	gw := a.asked.take(m.ID)
	slash := a.interaction(m.ID) != nil

	var (
		recent    []*discordgo.Message
		recentErr error
		wg        sync.WaitGroup
	)
	wg.Go(func() { recent, recentErr = a.sinceBot(ctx, channel, m.ID, botID, limit) })
	var chain []*discordgo.Message
	var chainErr error
	if !slash {
		chain, chainErr = a.replyChain(ctx, channel, m.ID, gw, botID, limit)
	}
	wg.Wait()

	seen := map[string]bool{m.ID: true}
	var picked []*discordgo.Message
	for _, part := range [][]*discordgo.Message{chain, recent} { // each newest first
		for _, msg := range part {
			if len(picked) < limit && !seen[msg.ID] && said(msg) {
				seen[msg.ID] = true
				picked = append(picked, msg)
			}
		}
	}
	slices.SortFunc(picked, func(x, y *discordgo.Message) int { return compareIDs(x.ID, y.ID) })
	out := make([]core.Said, 0, len(picked))
	for _, msg := range picked {
		s := a.toSaid(msg, m.Workspace, botID)
		s.RepliedTo = len(chain) > 0 && msg.ID == chain[0].ID // the message m answers
		out = append(out, s)
	}
	return out, errors.Join(chainErr, recentErr)
}

// sinceBot reads the messages before id in channel, newest first, back to
// the bot's last message there, which it includes (what the others may be
// answering), or to the start of a thread, whose first message is the one
// in the parent channel that it was started on; those addressed to the
// bot are left out.
func (a *Adapter) sinceBot(ctx context.Context, channel, before, botID string, limit int) ([]*discordgo.Message, error) {
	var page []*discordgo.Message
	err := a.call(ctx, "", "read channel history", func(opts ...discordgo.RequestOption) error {
		var err error
		page, err = a.session.ChannelMessages(channel, min(limit, 100), before, "", "", opts...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the messages before %s: %w", before, err)
	}
	var out []*discordgo.Message
	for _, msg := range page { // newest first
		if msg == nil || msg.Author == nil {
			continue
		}
		if msg.Type == discordgo.MessageTypeThreadStarterMessage {
			// The thread's first: it stands for the message in the parent
			// channel that the thread was started on.
			start, err := a.threadStart(ctx, msg)
			if start != nil {
				out = append(out, start)
			}
			return out, err
		}
		if msg.Author.ID == botID {
			out = append(out, msg) // what the others may be answering
			break
		}
		if !addressed(msg, botID) {
			out = append(out, msg)
		}
	}
	return out, nil
}

// threadStart is the message a thread was started on, from its opening
// system message (which carries it as referenced_message, else it is
// fetched); nil when it was deleted.
func (a *Adapter) threadStart(ctx context.Context, opening *discordgo.Message) (*discordgo.Message, error) {
	ref := opening.MessageReference
	if ref == nil || ref.MessageID == "" || ref.ChannelID == "" {
		return nil, nil
	}
	if r := opening.ReferencedMessage; r != nil && r.ID == ref.MessageID {
		return r, nil
	}
	return a.getMessage(ctx, ref.ChannelID, ref.MessageID)
}

// replyChain follows the replies from message id (gw is its gateway
// object, nil when it was not kept: then it is fetched) and returns the
// messages replied to, newest first. A deleted message ends the chain
// without an error.
func (a *Adapter) replyChain(ctx context.Context, channel, id string, gw *discordgo.Message, botID string, limit int) ([]*discordgo.Message, error) {
	cur := gw
	if cur == nil {
		var err error
		if cur, err = a.getMessage(ctx, channel, id); err != nil || cur == nil {
			return nil, err
		}
	}
	var out []*discordgo.Message
	for len(out) < limit {
		ref := cur.MessageReference
		if ref == nil || ref.MessageID == "" || ref.Type != discordgo.MessageReferenceTypeDefault ||
			compareIDs(ref.MessageID, cur.ID) >= 0 { // a reply is younger than what it replies to
			break
		}
		where := channel
		if ref.ChannelID != "" {
			where = ref.ChannelID
		}
		next := cur.ReferencedMessage
		if next == nil || next.ID != ref.MessageID {
			var err error
			if next, err = a.getMessage(ctx, where, ref.MessageID); err != nil || next == nil {
				return out, err
			}
		}
		out = append(out, next)
		if next.Author != nil && next.Author.ID == botID {
			break
		}
		cur = next
	}
	return out, nil
}

// getMessage fetches one message; nil without an error when Discord says
// it does not exist (deleted).
func (a *Adapter) getMessage(ctx context.Context, channel, id string) (*discordgo.Message, error) {
	var msg *discordgo.Message
	err := a.call(ctx, "", "read a message", func(opts ...discordgo.RequestOption) error {
		var err error
		msg, err = a.session.ChannelMessage(channel, id, opts...)
		return err
	})
	if code, _ := apiCode(err); code == 10008 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read message %s: %w", id, err)
	}
	return msg, nil
}

// addressed reports whether msg, by someone other than a bot, mentions the
// bot or replies to it: a message that was a turn of its own.
func addressed(msg *discordgo.Message, botID string) bool {
	if msg.Author.Bot {
		return false
	}
	if r := msg.ReferencedMessage; r != nil && r.Author != nil && r.Author.ID == botID {
		return true
	}
	return slices.ContainsFunc(msg.Mentions, func(u *discordgo.User) bool { return u != nil && u.ID == botID })
}

// said reports whether msg says something: a user's or the bot's message
// with text or files, not a system message (a pin, a member joining).
func said(msg *discordgo.Message) bool {
	if msg == nil || msg.Author == nil || (msg.Content == "" && len(msg.Attachments) == 0) {
		return false
	}
	switch msg.Type {
	case discordgo.MessageTypeDefault, discordgo.MessageTypeReply, discordgo.MessageTypeChatInputCommand:
		return true
	}
	return false
}

// toSaid is msg, in guild, as core takes it.
func (a *Adapter) toSaid(msg *discordgo.Message, guild, botID string) core.Said {
	name := func(u *discordgo.User) string { return a.nicks.name(guild, u) }
	author := name(msg.Author)
	if msg.Member != nil && msg.Member.Nick != "" {
		author = msg.Member.Nick
	}
	s := core.Said{Author: plain(author, nil, name), Bot: msg.Author.ID == botID, Text: plain(msg.Content, msg, name)}
	for _, att := range msg.Attachments {
		if att != nil && att.Filename != "" {
			s.Files = append(s.Files, att.Filename)
		}
	}
	return s
}

// maxNicks bounds the nicknames remembered.
const maxNicks = 8192

// nicknames are the guild nicknames of the authors of the messages the
// gateway delivered: only MESSAGE_CREATE carries a member object, so a
// message read back from REST (history, a reply) is named by what the
// bot saw its author called when it spoke.
type nicknames struct {
	mu     sync.Mutex
	byUser map[string]string // guild + "/" + user id -> nick
}

// saw remembers the nick (or its absence) of msg's author.
func (n *nicknames) saw(msg *discordgo.Message) {
	if msg.GuildID == "" || msg.Author == nil || msg.Member == nil {
		return
	}
	key := msg.GuildID + "/" + msg.Author.ID
	n.mu.Lock()
	defer n.mu.Unlock()
	if msg.Member.Nick == "" {
		delete(n.byUser, key)
		return
	}
	if n.byUser == nil || len(n.byUser) >= maxNicks {
		n.byUser = map[string]string{}
	}
	n.byUser[key] = msg.Member.Nick
}

// name is the name Discord shows for u in guild: the guild nickname as
// last seen, the global display name, or the username.
func (n *nicknames) name(guild string, u *discordgo.User) string {
	n.mu.Lock()
	nick := n.byUser[guild+"/"+u.ID]
	n.mu.Unlock()
	switch {
	case nick != "":
		return nick
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}

// compareIDs orders snowflakes (decimal strings) by value, which is their
// age.
func compareIDs(x, y string) int {
	if len(x) != len(y) {
		return len(x) - len(y)
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
