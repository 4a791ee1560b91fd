package telegramtest

import (
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// MaxLen is Telegram's limit on a message's visible text, in UTF-16 code
// units.
const MaxLen = 4096

const notModified = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"

// methodLocked answers one non-polling method; code != 0 is an error
// answer. s.mu is held.
func (s *Server) methodLocked(method string, p url.Values) (result any, code int, desc string) {
	switch method {
	case "getMe":
		return map[string]any{
			"id": s.opts.BotID, "is_bot": true, "first_name": "Golem",
			"username": s.opts.BotUsername, "can_join_groups": true,
		}, 0, ""
	case "sendMessage":
		if desc := checkMarkup(p.Get("reply_markup")); desc != "" {
			return nil, 400, desc
		}
		return s.sendMessageLocked(p)
	case "editMessageText":
		if desc := checkMarkup(p.Get("reply_markup")); desc != "" {
			return nil, 400, desc
		}
		return s.editMessageLocked(p)
	case "answerCallbackQuery":
		if p.Get("callback_query_id") == "" {
			return nil, 400, "Bad Request: callback_query_id is required"
		}
		if len([]rune(p.Get("text"))) > 200 {
			return nil, 400, "Bad Request: text is too long"
		}
		return true, 0, ""
	case "sendChatAction":
		if p.Get("chat_id") == "" || p.Get("action") == "" {
			return nil, 400, "Bad Request: chat_id and action are required"
		}
		return true, 0, ""
	case "setMyCommands":
		var cmds []struct{ Command, Description string }
		if err := json.Unmarshal([]byte(p.Get("commands")), &cmds); err != nil {
			return nil, 400, "Bad Request: can't parse commands JSON"
		}
		s.commands = p.Get("commands")
		return true, 0, ""
	case "getFile":
		f, ok := s.files[p.Get("file_id")]
		if !ok {
			return nil, 400, "Bad Request: invalid file_id"
		}
		return map[string]any{
			"file_id": p.Get("file_id"), "file_unique_id": "u" + p.Get("file_id"),
			"file_size": len(f.data), "file_path": f.path,
		}, 0, ""
	case "setMessageReaction":
		return s.reactLocked(p)
	case "sendMessageDraft":
		chatID, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
		if c := s.chats[chatID]; chatID <= 0 || (c != nil && c.typ != "private") {
			return nil, 400, "Bad Request: drafts can be sent only to private chats"
		}
		if p.Get("draft_id") == "" || p.Get("draft_id") == "0" {
			return nil, 400, "Bad Request: draft_id must be non-zero"
		}
		text, code, desc := visibleText(p)
		if code != 0 {
			return nil, code, desc
		}
		s.drafts[chatID] = append(s.drafts[chatID], text)
		return true, 0, ""
	}
	return nil, 404, "Not Found: method " + method + " not found"
}

// visibleText parses the text param under its parse_mode and checks the
// length limit, as Telegram does before posting.
func visibleText(p url.Values) (string, int, string) {
	raw := p.Get("text")
	text := raw
	switch strings.ToUpper(p.Get("parse_mode")) {
	case "":
	case "HTML":
		t, err := ParseHTML(raw)
		if err != nil {
			return "", 400, "Bad Request: " + err.Error()
		}
		text = t
	default:
		return "", 400, "Bad Request: unsupported parse_mode in this fake"
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "", 400, "Bad Request: message text is empty"
	}
	if UTF16Len(text) > MaxLen {
		return "", 400, "Bad Request: message is too long"
	}
	return text, 0, ""
}

func (s *Server) chatLocked(id int64, typ string) *chat {
	c := s.chats[id]
	if c == nil {
		if typ == "" {
			typ = "private"
			if id < 0 {
				typ = "supergroup"
			}
		}
		c = &chat{typ: typ, nextID: 1, messages: map[int64]*Message{}}
		s.chats[id] = c
	}
	return c
}

func (s *Server) sendMessageLocked(p url.Values) (any, int, string) {
	chatID, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || chatID == 0 {
		return nil, 400, "Bad Request: chat not found"
	}
	text, code, desc := visibleText(p)
	if code != 0 {
		return nil, code, desc
	}
	c := s.chatLocked(chatID, "")
	m := &Message{Chat: chatID, FromBot: true, Text: text, Raw: p.Get("text"), ParseMode: p.Get("parse_mode"), At: s.opts.Clock(),
		Mentions: mentions(text, p.Get("text"), p.Get("parse_mode"))}
	if code, desc := placeLocked(c, m, p); code != 0 {
		return nil, code, desc
	}
	s.addLocked(c, m)
	return s.messageJSON(c, m), 0, ""
}

// placeLocked sets where a sent message goes from its parameters: its
// forum topic and the message it replies to (refused when that is gone,
// unless allow_sending_without_reply).
func placeLocked(c *chat, m *Message, p url.Values) (int, string) {
	m.Thread, _ = strconv.ParseInt(p.Get("message_thread_id"), 10, 64)
	if r := p.Get("reply_to_message_id"); r != "" {
		m.ReplyTo, _ = strconv.ParseInt(r, 10, 64)
		if c.messages[m.ReplyTo] == nil {
			if p.Get("allow_sending_without_reply") != "true" {
				return 400, "Bad Request: message to be replied not found"
			}
			m.ReplyTo = 0
		}
	}
	return 0, ""
}

func (s *Server) editMessageLocked(p url.Values) (any, int, string) {
	chatID, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	id, _ := strconv.ParseInt(p.Get("message_id"), 10, 64)
	c := s.chats[chatID]
	if c == nil || c.messages[id] == nil {
		return nil, 400, "Bad Request: message to edit not found"
	}
	m := c.messages[id]
	if !m.FromBot {
		return nil, 400, "Bad Request: message can't be edited"
	}
	text, code, desc := visibleText(p)
	if code != 0 {
		return nil, code, desc
	}
	if text == m.Text && p.Get("text") == m.Raw && p.Get("parse_mode") == m.ParseMode {
		return nil, 400, notModified
	}
	m.Text, m.Raw, m.ParseMode = text, p.Get("text"), p.Get("parse_mode")
	m.Mentions = mentions(text, m.Raw, m.ParseMode)
	m.Edits++
	return s.messageJSON(c, m), 0, ""
}

func (s *Server) addLocked(c *chat, m *Message) {
	m.ID = c.nextID
	c.nextID++
	c.messages[m.ID] = m
	c.order = append(c.order, m.ID)
}

// userLinkRE finds links to a user in HTML, which Telegram turns into
// text_mention entities.
var userLinkRE = regexp.MustCompile(`(?i)href\s*=\s*["']\s*(tg://user\?id=[0-9]+)`)

// mentions lists whom a message with this visible text and raw text
// would notify (see Message.Mentions).
func mentions(visible, raw, parseMode string) []string {
	var out []string
	for _, e := range entities(visible) {
		if e["type"] == "mention" {
			units := utf16.Encode([]rune(visible))
			off, n := e["offset"].(int), e["length"].(int)
			out = append(out, string(utf16.Decode(units[off:off+n])))
		}
	}
	if strings.EqualFold(parseMode, "HTML") {
		for _, m := range userLinkRE.FindAllStringSubmatch(raw, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
	}
	return out
}

// messageJSON is the Bot API's Message object for m, as the answer to a
// send shows it: with the message it replies to.
func (s *Server) messageJSON(c *chat, m *Message) map[string]any {
	out := s.shownJSON(c, m)
	if r := c.messages[m.ReplyTo]; r != nil && m.ReplyTo != 0 && m.obj == nil {
		out["reply_to_message"] = s.shownJSON(c, r)
	}
	return out
}

// shownJSON is m as a reply to it shows it (reply_to_message): Telegram
// does not nest a reply's own reply there. A bot message shows its latest
// text.
func (s *Server) shownJSON(c *chat, m *Message) map[string]any {
	if m.obj != nil {
		return maps.Clone(m.obj)
	}
	at := m.At
	if at.IsZero() {
		at = time.Now()
	}
	out := map[string]any{
		"message_id": m.ID,
		"date":       at.Unix(),
		"chat":       map[string]any{"id": m.Chat, "type": c.typ},
		"text":       m.Text,
	}
	if m.FromBot {
		out["from"] = map[string]any{"id": s.opts.BotID, "is_bot": true, "first_name": "Golem", "username": s.opts.BotUsername}
	}
	if m.Thread != 0 {
		out["message_thread_id"] = m.Thread
		out["is_topic_message"] = true
	}
	return out
}

// checkMarkup is Telegram's answer to a reply_markup it refuses: not JSON,
// or an inline button whose callback_data is empty or over 64 bytes.
func checkMarkup(markup string) string {
	if markup == "" {
		return ""
	}
	var m struct {
		InlineKeyboard [][]struct {
			Text         string  `json:"text"`
			CallbackData *string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if json.Unmarshal([]byte(markup), &m) != nil {
		return "Bad Request: can't parse reply keyboard markup JSON object"
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				return "Bad Request: text buttons are unallowed in the inline keyboard"
			}
			if b.CallbackData != nil && (len(*b.CallbackData) == 0 || len(*b.CallbackData) > 64) {
				return "Bad Request: BUTTON_DATA_INVALID"
			}
		}
	}
	return ""
}
