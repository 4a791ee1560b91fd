package telegramtest

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
)

// botReactions are the emoji Telegram lets a bot set as a reaction
// (ReactionTypeEmoji); any other is REACTION_INVALID.
var botReactions = []string{
	"👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏",
	"👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", "❤‍🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔",
	"🤨", "😐", "🍓", "🍾", "💋", "🖕", "😈", "😴", "😭", "🤓", "👻", "👨‍💻", "👀", "🎃", "🙈", "😇",
	"😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄", "☃", "💅", "🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘",
	"💊", "🙊", "😎", "👾", "🤷‍♂", "🤷", "🤷‍♀", "😡",
}

// reactLocked answers setMessageReaction as Telegram does for a bot: the
// message must exist in the chat, the reaction is a JSON array of at most
// one ReactionTypeEmoji whose emoji is one bots may use, and it replaces
// the bot's reaction on the message (an empty array removes it).
func (s *Server) reactLocked(p url.Values) (any, int, string) {
	chatID, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	c := s.chats[chatID]
	if err != nil || c == nil {
		return nil, 400, "Bad Request: chat not found"
	}
	id, _ := strconv.ParseInt(p.Get("message_id"), 10, 64)
	m := c.messages[id]
	if m == nil {
		return nil, 400, "Bad Request: message to react not found"
	}
	var kinds []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if r := p.Get("reaction"); r != "" {
		if err := json.Unmarshal([]byte(r), &kinds); err != nil {
			return nil, 400, "Bad Request: can't parse reaction types JSON object"
		}
	}
	if len(kinds) > 1 {
		return nil, 400, "Bad Request: REACTIONS_TOO_MANY"
	}
	m.Reactions = nil
	for _, k := range kinds {
		if k.Type != "emoji" || !slices.Contains(botReactions, k.Emoji) {
			return nil, 400, "Bad Request: REACTION_INVALID"
		}
		m.Reactions = []string{k.Emoji}
	}
	s.notifyLocked()
	return true, 0, ""
}
