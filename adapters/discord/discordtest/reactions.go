package discordtest

import (
	"net/http"
	"regexp"
	"slices"
	"unicode/utf8"
)

var errUnknownEmoji = apiError{http.StatusBadRequest, 10014, "Unknown Emoji"}

// customEmoji is a guild emoji as a reaction route names it, "name:id".
var customEmoji = regexp.MustCompile(`^[A-Za-z0-9_]{2,32}:[0-9]{17,20}$`)

// addReaction answers PUT /channels/{c}/messages/{m}/reactions/{emoji}/@me
// as Discord does: 204 once the bot's reaction is on the message (again
// is no change), Unknown Message for a message not in that channel,
// Unknown Emoji for a name that is neither a Unicode emoji nor name:id (a
// Slack-style "eyes" is refused).
func (s *Server) addReaction(w http.ResponseWriter, r *http.Request) {
	_, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.Deleted || m.ChannelID != r.PathValue("c") || m.Flags&64 != 0 {
		s.fail(w, errUnknownMessage)
		return
	}
	emoji := r.PathValue("emoji")
	if !customEmoji.MatchString(emoji) && !unicodeEmoji(emoji) {
		s.fail(w, errUnknownEmoji)
		return
	}
	if !slices.Contains(m.Reactions, emoji) {
		m.Reactions = append(m.Reactions, emoji)
	}
	s.setStatus(http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

// unicodeEmoji reports whether s looks like one Unicode emoji: a few runes,
// the first outside ASCII.
func unicodeEmoji(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && r >= 0x2000 && utf8.RuneCountInString(s) <= 8
}
