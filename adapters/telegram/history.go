package telegram

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
)

// The chat context of a turn (core.Historian) comes from what the updates
// carried, never from a Bot API call: a bot cannot read a chat's history.
// A message for the bot that replies to another carries that message
// (reply_to_message, and the part quoted of it); in a group whose privacy
// mode is off the bot also receives the messages that are not for it,
// which are kept here in memory since the bot last answered there.

// place is a chat, or one forum topic of it (thread 0: none, or the
// General topic).
type place struct{ chat, thread int64 }

const (
	// saidCost and placeCost are the bytes counted for a message and for a
	// chat beyond their strings: the structs, slices and map entry.
	saidCost  = 96
	placeCost = 256
	// maxAsks bounds the replied-to messages kept per chat for the turns
	// still to start (a message for the bot waits in its queue).
	maxAsks = 8
)

// seenMsg is one message kept, with its Telegram id (ids grow within a
// chat) and the bytes counted for it.
type seenMsg struct {
	id   int
	said core.Said
	size int
}

// ask is a message for the bot that replied to another: what History
// returns for it beside the messages seen.
type ask struct {
	id    int
	reply seenMsg
}

// heard is what is kept of one place.
type heard struct {
	at   place
	msgs []seenMsg // not for the bot, oldest first
	asks []ask
	// answered is where the bot last answered: the messages before it
	// were the context of a turn already, or older.
	answered int
	bytes    int
	elem     *list.Element // in seen.lru
}

// seen is the memory of the messages seen in groups. Safe for concurrent
// use.
type seen struct {
	lim Memory

	mu     sync.Mutex
	places map[place]*heard
	lru    *list.List // of *heard, the most recently used first
	bytes  int
}

// newSeen keeps what lim allows, its zero fields the defaults.
func newSeen(lim Memory) *seen {
	return &seen{lim: lim.withDefaults(), places: map[place]*heard{}, lru: list.New()}
}

// entry is a message as kept, with the bytes counted for it; one larger
// than a quarter of what a chat may hold (no Telegram message is, with
// the default limits) has its text cut to fit, copied, so that the cut
// keeps no more of it alive.
func (s *seen) entry(id int, said core.Said) seenMsg {
	n := saidCost + len(said.Author) + len(said.Text)
	for _, f := range said.Files {
		n += len(f)
	}
	if over := n - s.lim.ChatBytes/4; over > 0 {
		keep := max(0, len(said.Text)-over)
		for keep > 0 && !utf8.RuneStart(said.Text[keep]) {
			keep--
		}
		n -= len(said.Text) - keep
		said.Text = strings.Clone(said.Text[:keep])
	}
	return seenMsg{id: id, said: said, size: n}
}

// touch returns the place's record, made if need be, as the most recently
// used. s.mu is held.
func (s *seen) touch(p place) *heard {
	h := s.places[p]
	if h == nil {
		h = &heard{at: p, bytes: placeCost}
		h.elem = s.lru.PushFront(h)
		s.places[p] = h
		s.bytes += placeCost
		return h
	}
	s.lru.MoveToFront(h.elem)
	return h
}

// fit drops what is over the limits: h's oldest messages, then the chats
// used least recently. s.mu is held.
func (s *seen) fit(h *heard) {
	for len(h.msgs) > 0 && (len(h.msgs) > s.lim.Messages || h.bytes > s.lim.ChatBytes) {
		s.drop(h, h.msgs[0].size)
		h.msgs[0] = seenMsg{} // the array would hold on to it
		h.msgs = h.msgs[1:]
	}
	for len(h.asks) > maxAsks || (len(h.asks) > 0 && h.bytes > s.lim.ChatBytes) {
		s.drop(h, h.asks[0].reply.size)
		h.asks[0] = ask{}
		h.asks = h.asks[1:]
	}
	for s.bytes > s.lim.TotalBytes && s.lru.Len() > 1 {
		s.forget(s.lru.Back().Value.(*heard))
	}
}

func (s *seen) drop(h *heard, n int) { h.bytes -= n; s.bytes -= n }

func (s *seen) forget(h *heard) {
	s.lru.Remove(h.elem)
	delete(s.places, h.at)
	s.bytes -= h.bytes
}

// saw keeps a message of p that was not for the bot.
func (s *seen) saw(p place, id int, said core.Said) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.touch(p)
	if id < h.answered {
		return // it came before the bot's answer, which is out already
	}
	e := s.entry(id, said)
	// Updates come in order; a message older than the last one kept
	// (the same update taken again) is not kept twice.
	if n := len(h.msgs); n > 0 && h.msgs[n-1].id >= id {
		return
	}
	h.msgs = append(h.msgs, e)
	h.bytes += e.size
	s.bytes += e.size
	s.fit(h)
}

// asked keeps the message that message id of p (one for the bot) replied
// to, for History.
func (s *seen) asked(p place, id, replyID int, reply core.Said) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.touch(p)
	e := s.entry(replyID, reply)
	h.asks = append(h.asks, ask{id: id, reply: e})
	h.bytes += e.size
	s.bytes += e.size
	s.fit(h)
}

// answered forgets what was said in p before message id: the bot has
// answered it, and what came before it was that turn's context.
func (s *seen) answered(p place, id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.places[p]
	if h == nil {
		h = s.touch(p) // so that updates still on their way are not kept
	} else {
		s.lru.MoveToFront(h.elem)
	}
	h.answered = max(h.answered, id)
	i := 0
	for i < len(h.msgs) && h.msgs[i].id < h.answered {
		s.drop(h, h.msgs[i].size)
		h.msgs[i] = seenMsg{}
		i++
	}
	h.msgs = h.msgs[i:]
	keep := h.asks[:0]
	for _, a := range h.asks {
		if a.id <= h.answered {
			s.drop(h, a.reply.size)
			continue
		}
		keep = append(keep, a)
	}
	clear(h.asks[len(keep):])
	h.asks = keep
	s.fit(h)
}

// history is what was said in p before message id, oldest first, at most
// limit messages: the ones seen since the bot last answered there and
// the message that id replied to, always among them when it replied to
// one (as the reply showed it: the part quoted). The replied-to message is
// handed out once.
func (s *seen) history(p place, id, limit int) []core.Said {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.places[p]
	if h == nil || limit <= 0 {
		return nil
	}
	var reply *seenMsg
	for i, a := range h.asks {
		if a.id == id {
			r := a.reply
			reply = &r
			s.drop(h, a.reply.size)
			h.asks = slices.Delete(h.asks, i, i+1)
			break
		}
	}
	var before []seenMsg
	for _, m := range h.msgs {
		if m.id >= id {
			break
		}
		if reply != nil && m.id == reply.id {
			continue // kept as the reply, which is kept within limit
		}
		before = append(before, m)
	}
	room := limit
	if reply != nil {
		room--
	}
	if len(before) > room {
		before = before[len(before)-room:]
	}
	if reply != nil {
		at := len(before)
		for at > 0 && before[at-1].id > reply.id {
			at--
		}
		before = append(before[:at], append([]seenMsg{*reply}, before[at:]...)...)
	}
	out := make([]core.Said, len(before))
	for i, m := range before {
		out[i] = m.said
	}
	return out
}

// retained is the bytes counted and the chats kept.
func (s *seen) retained() (bytes, chats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, len(s.places)
}

// History implements core.Historian from memory, without calling the Bot
// API: the message m replied to (its quoted part when the reply quoted
// one; the bot's own messages marked Said.Bot), and in groups where the
// bot receives every message (privacy mode off) the ones it saw in m's
// chat or forum topic since it last answered there, at most limit, the
// newest kept.
func (a *Adapter) History(_ context.Context, m core.Message, limit int) ([]core.Said, error) {
	p, id, err := placeOf(m)
	if err != nil {
		return nil, fmt.Errorf("telegram: read chat context: %w", err)
	}
	return a.seen.history(p, id, limit), nil
}

// HistoryInMemory implements core.MemoryHistorian: with replicas, the
// replica that polls reads a message's context as it takes the message,
// and the context goes with it to the replica that runs it.
func (a *Adapter) HistoryInMemory() {}

func placeOf(m core.Message) (place, int, error) {
	chat, err := parseID(m.Channel)
	if err != nil {
		return place{}, 0, fmt.Errorf("channel %q: %w", m.Channel, err)
	}
	var thread int64
	if m.Thread != "" {
		if thread, err = strconv.ParseInt(m.Thread, 10, 64); err != nil {
			return place{}, 0, fmt.Errorf("thread %q: %w", m.Thread, err)
		}
	}
	id, err := strconv.Atoi(m.ID)
	if err != nil {
		return place{}, 0, fmt.Errorf("message id %q: %w", m.ID, err)
	}
	return place{chat, thread}, id, nil
}

// overhear keeps a group message the bot received but that is not for
// it (privacy mode off), for the chat context of the next turn there.
// Called from the poll loop, in the order of the updates.
func (a *Adapter) overhear(u tgbotapi.Update, x extra) {
	msg := u.Message
	if msg == nil || msg.Chat == nil || msg.Chat.Type == "private" || msg.Chat.Type == "channel" {
		return
	}
	if msg.From != nil && msg.From.ID == a.self.ID {
		return
	}
	said := a.said(msg, "")
	if said.Text == "" && len(said.Files) == 0 {
		return // a service message: someone joined, a topic was made, ...
	}
	a.seen.saw(place{msg.Chat.ID, x.thread()}, msg.MessageID, said)
}

// noteReply keeps the message that m (a group message for the bot, msg
// in its update) replied to, for History. A forum topic's messages all
// reply to the topic's first message: that is no reply.
func (a *Adapter) noteReply(m core.Message, msg *tgbotapi.Message, x extra) {
	r := msg.ReplyToMessage
	if m.DM || r == nil || int64(r.MessageID) == x.thread() {
		return
	}
	quote := ""
	if x.Message != nil && x.Message.Quote != nil {
		quote = x.Message.Quote.Text
	}
	said := a.said(r, quote)
	if said.Text == "" && len(said.Files) == 0 {
		return
	}
	said.RepliedTo = true
	p, id, err := placeOf(m)
	if err != nil {
		return
	}
	a.seen.asked(p, id, r.MessageID, said)
}

// said is msg as chat context: its author by name (first and last name,
// else @username; a channel or an anonymous admin by the chat's title),
// its text or caption as sent (mentions are plain text in it; quote, when
// set, instead), its files by name or kind.
func (a *Adapter) said(msg *tgbotapi.Message, quote string) core.Said {
	s := core.Said{Text: msg.Text, Files: kinds(msg)}
	if s.Text == "" {
		s.Text = msg.Caption
	}
	if quote != "" {
		s.Text = quote
	}
	switch u := msg.From; {
	case msg.SenderChat != nil && msg.SenderChat.Title != "":
		s.Author = msg.SenderChat.Title
	case u == nil:
	case u.ID == a.self.ID:
		s.Author, s.Bot = personName(&a.self), true
	default:
		s.Author = personName(u)
	}
	return s
}

// personName is a user's first and last name, else "@username".
func personName(u *tgbotapi.User) string {
	if n := strings.TrimSpace(u.FirstName + " " + u.LastName); n != "" {
		return n
	}
	if u.UserName != "" {
		return "@" + u.UserName
	}
	return ""
}

// kinds names what a message carries beside its text: a file by its name
// where it has one, else by its kind.
func kinds(msg *tgbotapi.Message) []string {
	var out []string
	named := func(name, kind string) {
		if name == "" {
			name = kind
		}
		out = append(out, name)
	}
	if len(msg.Photo) > 0 {
		out = append(out, "photo")
	}
	if d := msg.Document; d != nil && msg.Animation == nil {
		named(d.FileName, "document")
	}
	if v := msg.Animation; v != nil {
		named(v.FileName, "animation")
	}
	if v := msg.Video; v != nil {
		named(v.FileName, "video")
	}
	if v := msg.Audio; v != nil {
		named(v.FileName, "audio")
	}
	if msg.Voice != nil {
		out = append(out, "voice message")
	}
	if msg.VideoNote != nil {
		out = append(out, "video message")
	}
	if st := msg.Sticker; st != nil {
		out = append(out, strings.TrimSpace("sticker "+st.Emoji))
	}
	if p := msg.Poll; p != nil {
		out = append(out, "poll: "+p.Question)
	}
	if msg.Location != nil {
		out = append(out, "location")
	}
	if msg.Contact != nil {
		out = append(out, "contact")
	}
	return out
}
