package telegramtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// User is a Telegram user who writes to the bot.
type User struct {
	ID        int64
	Username  string
	FirstName string
	LastName  string
	IsBot     bool
}

// Incoming is a message a user sends; Push turns it into an update.
type Incoming struct {
	Chat     int64  // > 0 private chat (the user's id), < 0 a group
	ChatType string // default "private" for Chat > 0, "supergroup" otherwise
	From     User
	Text     string // the text, or a photo's or document's caption
	ReplyTo  int64  // message id it replies to; 0 if none
	// Quote is the part of the ReplyTo message the user quoted (the
	// update's quote field); it must be in that message's text or caption.
	Quote    string
	Thread   int64  // forum topic id (message_thread_id); 0 if none
	Photo    []byte // a photo's bytes (sent as one size)
	Document *Document
	Voice    []byte // a voice message's bytes (OGG/Opus as Telegram sends it)
	// Edited sends the message as an edited_message update.
	Edited bool
}

// Document is a file sent as a document.
type Document struct {
	Name string
	Data []byte
}

// Pushed names what Push created.
type Pushed struct {
	UpdateID  int64 // 0 when the bot gets no update for it (PrivacyMode)
	MessageID int64
}

var (
	mentionRE = regexp.MustCompile(`@[A-Za-z0-9_]{3,}`)
	commandRE = regexp.MustCompile(`^/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?`)
)

// Push queues an update carrying m for getUpdates and returns its ids.
// Entities for @mentions and a leading /command are added as Telegram
// does, with UTF-16 offsets.
func (s *Server) Push(m Incoming) Pushed {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(m.Chat, m.ChatType)
	if m.ChatType != "" {
		c.typ = m.ChatType
	}
	if m.From.FirstName == "" {
		m.From.FirstName = "User"
	}
	msg := &Message{Chat: m.Chat, Text: m.Text, Raw: m.Text, ReplyTo: m.ReplyTo, Thread: m.Thread, From: m.From, At: s.opts.Clock()}
	s.addLocked(c, msg)

	chatJSON := map[string]any{"id": m.Chat, "type": c.typ}
	if c.typ != "private" {
		chatJSON["title"] = fmt.Sprintf("Group %d", -m.Chat)
	}
	if m.Thread != 0 {
		chatJSON["is_forum"] = true
	}
	from := userJSON(m.From)
	out := map[string]any{
		"message_id": msg.ID,
		"date":       time.Now().Unix(),
		"chat":       chatJSON,
		"from":       from,
	}
	textKey, entKey := "text", "entities"
	if m.Photo != nil || m.Document != nil || m.Voice != nil {
		textKey, entKey = "caption", "caption_entities"
	}
	if m.Text != "" {
		out[textKey] = m.Text
		if ents := entities(m.Text); len(ents) > 0 {
			out[entKey] = ents
		}
	}
	if m.Photo != nil {
		id := s.addFileLocked(fmt.Sprintf("photos/file_%d.jpg", len(s.files)), m.Photo)
		out["photo"] = []map[string]any{
			{"file_id": id + "-small", "file_unique_id": "us" + id, "width": 90, "height": 90, "file_size": 10},
			{"file_id": id, "file_unique_id": "u" + id, "width": 800, "height": 600, "file_size": len(m.Photo)},
		}
		s.files[id+"-small"] = file{path: "photos/small.jpg", data: []byte("small")}
	}
	if m.Document != nil {
		id := s.addFileLocked(fmt.Sprintf("documents/file_%d", len(s.files)), m.Document.Data)
		out["document"] = map[string]any{
			"file_id": id, "file_unique_id": "u" + id, "file_name": m.Document.Name,
			"file_size": len(m.Document.Data), "mime_type": "application/octet-stream",
		}
	}
	if m.Voice != nil {
		id := s.addFileLocked(fmt.Sprintf("voice/file_%d.oga", len(s.files)), m.Voice)
		out["voice"] = map[string]any{
			"file_id": id, "file_unique_id": "u" + id, "duration": 3,
			"mime_type": "audio/ogg", "file_size": len(m.Voice),
		}
	}
	if m.Thread != 0 {
		out["message_thread_id"] = m.Thread
		out["is_topic_message"] = true
	}
	// What a reply to this message shows of it: the message without its
	// own reply (Telegram does not nest replies).
	msg.obj = maps.Clone(out)
	var replied *Message // nil: not a reply, or to a message the fake does not hold
	if m.ReplyTo != 0 {
		replied = c.messages[m.ReplyTo]
	}
	if m.Quote != "" {
		if replied == nil {
			panic("telegramtest: Push: a quote without ReplyTo")
		}
		at := strings.Index(replied.Text, m.Quote)
		if at < 0 {
			panic(fmt.Sprintf("telegramtest: Push: quote %q is not in message %d", m.Quote, m.ReplyTo))
		}
		// Telegram keeps only style entities in a quote, none here.
		out["quote"] = map[string]any{"text": m.Quote, "position": UTF16Len(replied.Text[:at]), "is_manual": true}
	}
	switch {
	case replied != nil:
		out["reply_to_message"] = s.shownJSON(c, replied)
	case m.Thread != 0:
		// Telegram sets every topic message's reply_to_message to the
		// topic's creation message.
		out["reply_to_message"] = map[string]any{
			"message_id": m.Thread, "date": time.Now().Unix(), "chat": chatJSON,
			"from": from, "message_thread_id": m.Thread,
			"forum_topic_created": map[string]any{"name": "topic", "icon_color": 7322096},
		}
	}
	key := "message"
	if m.Edited {
		key = "edited_message"
		out["edit_date"] = time.Now().Unix()
	}
	if s.opts.PrivacyMode && c.typ != "private" && !s.forBot(m.Text, replied) {
		s.notifyLocked()
		return Pushed{MessageID: msg.ID} // posted, but the bot does not see it
	}
	s.nextUpd++
	upd, _ := json.Marshal(map[string]any{"update_id": s.nextUpd, key: out})
	s.updates = append(s.updates, upd)
	s.updateIDs = append(s.updateIDs, s.nextUpd)
	s.notifyLocked()
	return Pushed{UpdateID: s.nextUpd, MessageID: msg.ID}
}

// forBot reports whether a group message with text, replying to replied
// (nil: none), reaches the bot in privacy mode.
func (s *Server) forBot(text string, replied *Message) bool {
	if replied != nil && replied.FromBot {
		return true
	}
	if cmd := commandRE.FindString(text); cmd != "" {
		_, bot, named := strings.Cut(cmd, "@")
		return !named || strings.EqualFold(bot, s.opts.BotUsername)
	}
	for _, e := range entities(text) {
		if e["type"] != "mention" {
			continue
		}
		units := utf16.Encode([]rune(text))
		off, n := e["offset"].(int), e["length"].(int)
		if strings.EqualFold(string(utf16.Decode(units[off:off+n])), "@"+s.opts.BotUsername) {
			return true
		}
	}
	return false
}

// userJSON is the Bot API's User object for u.
func userJSON(u User) map[string]any {
	from := map[string]any{"id": u.ID, "is_bot": u.IsBot, "first_name": u.FirstName}
	if u.LastName != "" {
		from["last_name"] = u.LastName
	}
	if u.Username != "" {
		from["username"] = u.Username
	}
	return from
}

// PushRaw queues an update made of fields as they are, plus a new
// update_id which it returns: for updates the adapter must survive, such
// as ones the library cannot decode.
func (s *Server) PushRaw(fields map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpd++
	upd := map[string]any{}
	for k, v := range fields {
		upd[k] = v
	}
	upd["update_id"] = s.nextUpd
	b, _ := json.Marshal(upd)
	s.updates = append(s.updates, b)
	s.updateIDs = append(s.updateIDs, s.nextUpd)
	s.notifyLocked()
	return s.nextUpd
}

// PushCallback queues a click by u on a button with data under the bot's
// message messageID in chatID (a callback_query update) and returns the
// callback query's id.
func (s *Server) PushCallback(chatID int64, u User, messageID int, data string) string {
	s.mu.Lock()
	s.nextCallback++
	id := "cbq" + strconv.Itoa(s.nextCallback)
	s.mu.Unlock()
	typ := "private"
	if chatID < 0 {
		typ = "supergroup"
	}
	s.PushRaw(map[string]any{"callback_query": map[string]any{
		"id":            id,
		"from":          map[string]any{"id": u.ID, "is_bot": u.IsBot, "first_name": u.FirstName, "username": u.Username},
		"message":       map[string]any{"message_id": messageID, "date": 1, "chat": map[string]any{"id": chatID, "type": typ}},
		"chat_instance": "ci",
		"data":          data,
	}})
	return id
}

func (s *Server) addFileLocked(path string, data []byte) string {
	id := fmt.Sprintf("F%d", len(s.files)+1)
	s.files[id] = file{path: path, data: data}
	return id
}

// PushPrivate sends text from u in the private chat with the bot.
func (s *Server) PushPrivate(u User, text string) Pushed {
	return s.Push(Incoming{Chat: u.ID, From: u, Text: text})
}

// PushGroup sends text from u in group chatID (< 0). Mention the bot by
// writing "@" + BotUsername() in text.
func (s *Server) PushGroup(chatID int64, u User, text string) Pushed {
	return s.Push(Incoming{Chat: chatID, From: u, Text: text})
}

// PushReply sends text from u in chatID as a reply to message replyTo
// (e.g. one of the bot's answers).
func (s *Server) PushReply(chatID int64, u User, replyTo int64, text string) Pushed {
	return s.Push(Incoming{Chat: chatID, From: u, Text: text, ReplyTo: replyTo})
}

// PushQuote sends text from u in chatID as a reply to message replyTo
// that quotes part of it (quote must be in its text or caption).
func (s *Server) PushQuote(chatID int64, u User, replyTo int64, quote, text string) Pushed {
	return s.Push(Incoming{Chat: chatID, From: u, Text: text, ReplyTo: replyTo, Quote: quote})
}

// PushTopic sends text from u in forum topic thread of group chatID.
func (s *Server) PushTopic(chatID, thread int64, u User, text string) Pushed {
	return s.Push(Incoming{Chat: chatID, ChatType: "supergroup", From: u, Text: text, Thread: thread})
}

// PushPhoto sends a photo with caption from u in chatID.
func (s *Server) PushPhoto(chatID int64, u User, caption string, data []byte) Pushed {
	return s.Push(Incoming{Chat: chatID, From: u, Text: caption, Photo: data})
}

// PushDocument sends a document with caption from u in chatID.
func (s *Server) PushDocument(chatID int64, u User, caption, name string, data []byte) Pushed {
	return s.Push(Incoming{Chat: chatID, From: u, Text: caption, Document: &Document{Name: name, Data: data}})
}

// entities finds @mentions and a leading /command in text, with UTF-16
// offsets and lengths.
func entities(text string) []map[string]any {
	var out []map[string]any
	if loc := commandRE.FindStringIndex(text); loc != nil {
		out = append(out, map[string]any{"type": "bot_command", "offset": 0, "length": UTF16Len(text[:loc[1]])})
	}
	for _, loc := range mentionRE.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && !strings.ContainsAny(text[loc[0]-1:loc[0]], " \n\t(") {
			continue // part of a command or an e-mail address
		}
		out = append(out, map[string]any{"type": "mention", "offset": UTF16Len(text[:loc[0]]), "length": UTF16Len(text[loc[0]:loc[1]])})
	}
	return out
}
