package slacktest

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// User is a member of the fake's workspace, as users.info tells it.
type User struct {
	ID          string // "U..."
	Name        string // the user name, "ann"
	RealName    string // "Ann Smith"
	DisplayName string // "ann.s"; Slack's profile.display_name, may be ""
	IsBot       bool
	Deleted     bool
}

// AddUser makes u known to users.info. The bot's own user is known from
// the start.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// AddChannel names a channel for conversations.info.
func (s *Server) AddChannel(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[id] = name
}

// channelInfoLocked answers conversations.info.
func (s *Server) channelInfoLocked(a map[string]string) (map[string]any, string) {
	name, ok := s.channels[a["channel"]]
	if !ok {
		return nil, "channel_not_found"
	}
	return map[string]any{"channel": map[string]any{"id": a["channel"], "name": name, "is_channel": true}}, ""
}

// AddMessage stores a message as if a user posted it in m.Channel (in the
// thread m.ThreadTS when set) without the bot being told: nobody mentioned
// it. TS is assigned when empty. Files are entries from AddFile.
func (s *Server) AddMessage(m Message) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	if m.TS == "" {
		m.TS = s.nextTSLocked()
	}
	c := m
	s.msgs = append(s.msgs, &c)
	return m
}

// DefaultScopes are the bot token's scopes unless SetScopes changes them:
// all that golem asks for in its setup steps.
var DefaultScopes = []string{"app_mentions:read", "channels:history", "groups:history", "im:history", "mpim:history",
	"chat:write", "reactions:write", "files:read", "files:write", "users:read", "channels:read", "groups:read", "commands",
	"assistant:write"}

// SetScopes replaces the bot token's scopes. A method that needs a scope
// the token lacks is answered ok:false, missing_scope, with needed and
// provided, as Slack answers.
func (s *Server) SetScopes(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes = slices.Clone(scopes)
}

// GroupDM makes channel a group DM (an mpim): reading it back needs
// mpim:history, not groups:history, as on Slack.
func (s *Server) GroupDM(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mpims[channel] = true
}

// Leave takes the bot out of channel: conversations.history,
// conversations.replies and chat.postMessage there answer not_in_channel.
func (s *Server) Leave(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left[channel] = true
}

// neededScopeLocked is the scope method needs with args that the token
// lacks, or "".
func (s *Server) neededScopeLocked(method string, a map[string]string) string {
	var need string
	switch method {
	case "conversations.history", "conversations.replies":
		switch {
		case s.mpims[a["channel"]]:
			need = "mpim:history"
		case strings.HasPrefix(a["channel"], "C"):
			need = "channels:history"
		case strings.HasPrefix(a["channel"], "G"):
			need = "groups:history"
		case strings.HasPrefix(a["channel"], "D"):
			need = "im:history"
		}
	case "users.info":
		need = "users:read"
	case "conversations.info":
		switch {
		case strings.HasPrefix(a["channel"], "G"):
			need = "groups:read"
		default:
			need = "channels:read"
		}
	case "chat.postMessage", "chat.update", "chat.postEphemeral", "chat.startStream", "chat.appendStream", "chat.stopStream",
		"assistant.threads.setStatus":
		need = "chat:write"
	case "assistant.threads.setTitle", "assistant.threads.setSuggestedPrompts":
		need = "assistant:write"
	case "reactions.add", "reactions.remove":
		need = "reactions:write"
	}
	if need == "" || slices.Contains(s.scopes, need) {
		return ""
	}
	return need
}

// History limits: conversations.history takes at most 999 a page,
// conversations.replies 1000; both default to 100 here (Slack's history
// default; the replies default is larger, which no client should rely on).
const (
	maxHistoryLimit = 999
	maxRepliesLimit = 1000
)

// historyLocked answers conversations.history: the channel's top-level
// messages, newest first, between oldest and latest (exclusive unless
// inclusive), limit a page, with has_more and a next_cursor for the next
// (older) page.
func (s *Server) historyLocked(a map[string]string) (map[string]any, string) {
	if a["channel"] == "" {
		return nil, "channel_not_found"
	}
	if s.left[a["channel"]] {
		return nil, "not_in_channel"
	}
	if code := badRange(a); code != "" {
		return nil, code
	}
	var out []*Message
	for _, m := range slices.Backward(s.msgs) {
		if m.Channel == a["channel"] && m.ThreadTS == "" && inRange(m.TS, a) {
			out = append(out, m)
		}
	}
	return s.pageLocked(out, a, maxHistoryLimit)
}

// repliesLocked answers conversations.replies: the thread's parent, then
// its replies between oldest and latest, oldest first, limit a page (the
// parent counted), with has_more and a next_cursor for the next (newer)
// page.
func (s *Server) repliesLocked(a map[string]string) (map[string]any, string) {
	if a["channel"] == "" {
		return nil, "channel_not_found"
	}
	if s.left[a["channel"]] {
		return nil, "not_in_channel"
	}
	if code := badRange(a); code != "" {
		return nil, code
	}
	parent := s.findLocked(a["channel"], a["ts"])
	if a["ts"] == "" || parent == nil || parent.ThreadTS != "" && parent.ThreadTS != parent.TS {
		return nil, "thread_not_found"
	}
	out := []*Message{parent}
	for _, m := range s.msgs {
		if m.Channel == a["channel"] && m.ThreadTS == a["ts"] && m != parent && inRange(m.TS, a) {
			out = append(out, m)
		}
	}
	return s.pageLocked(out, a, maxRepliesLimit)
}

// pageLocked cuts msgs to the page the call's cursor and limit ask for.
// A cursor names the first message of its page, as "next_ts:<ts>" in
// base64, like Slack's; one that names no message is invalid_cursor.
func (s *Server) pageLocked(msgs []*Message, a map[string]string, maxLimit int) (map[string]any, string) {
	n := 100
	if l, ok := a["limit"]; ok && l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 0 || v > maxLimit {
			return nil, "invalid_limit"
		}
		if v > 0 {
			n = v
		}
	}
	if c := a["cursor"]; c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		ts, ok := strings.CutPrefix(string(raw), "next_ts:")
		i := slices.IndexFunc(msgs, func(m *Message) bool { return m.TS == ts })
		if err != nil || !ok || i < 0 {
			return nil, "invalid_cursor"
		}
		msgs = msgs[i:]
	}
	res := map[string]any{"has_more": len(msgs) > n}
	if len(msgs) > n {
		res["response_metadata"] = map[string]any{
			"next_cursor": base64.StdEncoding.EncodeToString([]byte("next_ts:" + msgs[n].TS))}
		msgs = msgs[:n]
	}
	wire := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		wire = append(wire, s.wireLocked(m, a["include_all_metadata"] == "1" || a["include_all_metadata"] == "true"))
	}
	res["messages"] = wire
	return res, ""
}

// slackTS is a Slack timestamp's form.
var slackTS = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// badRange is the error code for a malformed oldest or latest, or "".
func badRange(a map[string]string) string {
	if l := a["latest"]; l != "" && !slackTS.MatchString(l) {
		return "invalid_ts_latest"
	}
	if o := a["oldest"]; o != "" && !slackTS.MatchString(o) {
		return "invalid_ts_oldest"
	}
	return ""
}

// wireLocked is m as conversations.history and conversations.replies show
// it: a thread's parent carries thread_ts (its own ts) and reply_count.
func (s *Server) wireLocked(m *Message, metadata bool) map[string]any {
	w := wireMessage(m)
	if metadata && m.Metadata != "" {
		w["metadata"] = json.RawMessage(m.Metadata)
	}
	if m.ThreadTS == "" {
		n := 0
		for _, r := range s.msgs {
			if r.Channel == m.Channel && r.ThreadTS == m.TS {
				n++
			}
		}
		if n > 0 {
			w["thread_ts"], w["reply_count"] = m.TS, n
		}
	}
	return w
}

// userInfoLocked answers users.info.
func (s *Server) userInfoLocked(a map[string]string) (map[string]any, string) {
	u, ok := s.users[a["user"]]
	if !ok {
		return nil, "user_not_found"
	}
	return map[string]any{"user": map[string]any{
		"id": u.ID, "team_id": TeamID, "name": u.Name, "deleted": u.Deleted, "real_name": u.RealName,
		"is_bot": u.IsBot, "profile": map[string]any{
			"real_name": u.RealName, "real_name_normalized": u.RealName,
			"display_name": u.DisplayName, "display_name_normalized": u.DisplayName, "team": TeamID},
	}}, ""
}
