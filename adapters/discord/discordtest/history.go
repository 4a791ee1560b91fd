package discordtest

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// user is what the fake knows of a user who posted.
type user struct {
	name, global string
	bot          bool
}

var (
	errMissingAccess = apiError{http.StatusForbidden, 50001, "Missing Access"}
	errLimit         = apiError{http.StatusBadRequest, 50035, "Invalid Form Body (limit: int value should be between 1 and 100)"}
	errCursors       = apiError{http.StatusBadRequest, 50035, "Invalid Form Body (before, after and around are mutually exclusive)"}
)

// NoHistory takes the Read Message History permission from the bot in
// channel, as a channel override can: GET /channels/{channel}/messages
// then answers an empty list and GET /channels/{channel}/messages/{id}
// 403 Missing Access, as Discord does.
func (s *Server) NoHistory(channel string) {
	s.mu.Lock()
	s.noHistory[channel] = true
	s.mu.Unlock()
}

// Delete deletes message id, as its author would: it is gone from the
// channel's history, fetching it answers 404 Unknown Message, and a reply
// to it carries referenced_message null.
func (s *Server) Delete(id string) {
	s.mu.Lock()
	if m := s.messages[id]; m != nil {
		m.Deleted = true
	}
	s.notify()
	s.mu.Unlock()
}

// channelMessages answers GET /channels/{c}/messages: at most limit (1 to
// 100, default 50) live messages, newest first, before, after or around
// one message id (snowflakes, at most one of the three), as Discord does.
// Ephemeral messages are not in a channel's history.
func (s *Server) channelMessages(w http.ResponseWriter, r *http.Request) {
	_, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := 50
	if v, has := q["limit"]; has {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > 100 {
			s.fail(w, errLimit)
			return
		}
		limit = n
	}
	var cursor, which string
	for _, k := range []string{"before", "after", "around"} {
		v := q.Get(k)
		if v == "" {
			continue
		}
		if which != "" {
			s.fail(w, errCursors)
			return
		}
		if !snowflake(v) {
			s.fail(w, apiError{http.StatusBadRequest, 50035, "Invalid Form Body (" + k + ": Value \"" + v + "\" is not snowflake.)"})
			return
		}
		cursor, which = v, k
	}
	c := r.PathValue("c")
	out := []any{}
	if s.noHistory[c] {
		writeJSON(w, http.StatusOK, out)
		return
	}
	var live []*Message // oldest first
	for _, id := range s.order {
		if m := s.messages[id]; m.ChannelID == c && !m.Deleted && m.Flags&64 == 0 {
			live = append(live, m)
		}
	}
	var pick []*Message
	switch which {
	case "", "before":
		for i := len(live) - 1; i >= 0 && len(pick) < limit; i-- {
			if which == "" || older(live[i].ID, cursor) {
				pick = append(pick, live[i])
			}
		}
	case "after":
		var after []*Message
		for _, m := range live {
			if older(cursor, m.ID) && len(after) < limit {
				after = append(after, m)
			}
		}
		for i := len(after) - 1; i >= 0; i-- {
			pick = append(pick, after[i])
		}
	case "around":
		at := len(live)
		for i, m := range live {
			if !older(m.ID, cursor) {
				at = i
				break
			}
		}
		lo := max(0, at-limit/2)
		hi := min(len(live), lo+limit)
		lo = max(0, hi-limit)
		for i := hi - 1; i >= lo; i-- {
			pick = append(pick, live[i])
		}
	}
	for _, m := range pick {
		out = append(out, s.messageJSON(m))
	}
	writeJSON(w, http.StatusOK, out)
}

// channelMessage answers GET /channels/{c}/messages/{m}: the message, 404
// Unknown Message when it is not (or no longer) in that channel, 403
// Missing Access without Read Message History.
func (s *Server) channelMessage(w http.ResponseWriter, r *http.Request) {
	_, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	c := r.PathValue("c")
	if s.noHistory[c] {
		s.fail(w, errMissingAccess)
		return
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.Deleted || m.ChannelID != c || m.Flags&64 != 0 {
		s.fail(w, errUnknownMessage)
		return
	}
	writeJSON(w, http.StatusOK, s.messageJSON(m))
}

// threadStarter is the type of the system message that opens a thread
// started on a message.
const threadStarter = 21

// StartThread starts a thread on message id, as a user can, and returns
// the thread's id (the message's, as on Discord); "" for an unknown
// message. Users' messages posted with the thread's id as their channel
// are in the thread.
func (s *Server) StartThread(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil || m.Deleted {
		return ""
	}
	if m.Thread == "" {
		s.openThread(m)
	}
	return m.Thread
}

// openThread makes a thread on m, opened by a system message (type 21)
// that refers to m, as Discord does. Call with s.mu held.
func (s *Server) openThread(m *Message) {
	m.Thread = m.ID
	s.threads[m.ID] = m.ChannelID
	start := &Message{ID: s.newID(), ChannelID: m.ID, GuildID: m.GuildID, AuthorID: m.AuthorID, Type: threadStarter,
		ReplyTo: m.ID, At: time.Now()}
	s.messages[start.ID] = start
	s.order = append(s.order, start.ID)
	s.notify()
}

// snowflake reports whether v is a snowflake: a decimal number.
func snowflake(v string) bool {
	if v == "" || len(v) > 20 {
		return false
	}
	return strings.Trim(v, "0123456789") == ""
}

// older reports whether snowflake a is older (smaller) than b.
func older(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
