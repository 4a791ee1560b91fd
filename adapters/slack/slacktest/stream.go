package slacktest

import (
	"encoding/json"
	"math"
	"strings"
	"time"
)

// MaxStreamText is the most a streamed message holds, in characters: the
// markdown of one call and the message as it grows are both refused past
// it (msg_too_long).
const MaxStreamText = 12000

// The per-minute limits of the streaming methods, per workspace, as Slack
// tiers them: Tier 2 for chat.startStream and chat.stopStream, Tier 4 for
// chat.appendStream. A call past them is answered 429 with Retry-After.
const (
	StreamStartsPerMinute  = 20
	StreamAppendsPerMinute = 100
	StreamStopsPerMinute   = 20
)

// DefaultStreamIdle is how long a stream may go without an append before
// Slack ends it, unless Options.StreamIdle says otherwise.
const DefaultStreamIdle = 5 * time.Minute

// streamLimit is the per-minute limit of a streaming method, 0 for others.
func (s *Server) streamLimit(method string) int {
	switch method {
	case "chat.startStream":
		return StreamStartsPerMinute
	case "chat.appendStream":
		return StreamAppendsPerMinute
	case "chat.stopStream":
		return StreamStopsPerMinute
	}
	return 0
}

// overStreamLimitLocked reports whether one more call of a streaming
// method at now would pass its tier, and if so in how many whole seconds
// a slot frees.
func (s *Server) overStreamLimitLocked(method string, now time.Time) (retryAfter int, over bool) {
	limit := s.streamLimit(method)
	if limit == 0 {
		return 0, false
	}
	cut := now.Add(-time.Minute)
	times := s.streamCalls[method]
	i := 0
	for i < len(times) && !times[i].After(cut) {
		i++
	}
	times = times[i:]
	s.streamCalls[method] = times
	if len(times) < limit {
		return 0, false
	}
	free := times[len(times)-limit].Add(time.Minute).Sub(now)
	return max(1, int(math.Ceil(free.Seconds()))), true
}

// noteStreamCallLocked counts a call of a streaming method against its tier.
func (s *Server) noteStreamCallLocked(method string, at time.Time) {
	if s.streamLimit(method) > 0 {
		s.streamCalls[method] = append(s.streamCalls[method], at)
	}
}

// isDMLocked reports whether channel is a direct message with the bot.
func (s *Server) isDMLocked(channel string) bool {
	return strings.HasPrefix(channel, "D") && !s.mpims[channel]
}

// expireStreamsLocked ends the streams idle for longer than StreamIdle.
func (s *Server) expireStreamsLocked(now time.Time) {
	idle := s.opts.StreamIdle
	if idle <= 0 {
		idle = DefaultStreamIdle
	}
	for _, m := range s.msgs {
		if m.Streaming && now.Sub(m.streamAt) > idle {
			m.Streaming = false
		}
	}
}

// streamText reads the markdown of a streaming call: markdown_text, and
// the text of the markdown_text chunks, in order. bad reports chunks that
// do not parse or are of an unknown type.
func streamText(a map[string]string) (text string, given, bad bool) {
	text, given = a["markdown_text"]
	if c, ok := a["chunks"]; ok {
		var chunks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(c), &chunks) != nil {
			return "", true, true
		}
		for _, ch := range chunks {
			switch ch.Type {
			case "markdown_text":
				text += ch.Text
			case "task_update", "plan_update", "blocks":
			default:
				return "", true, true
			}
		}
		given = given || len(chunks) > 0
	}
	return text, given, false
}

// streamLocked runs chat.startStream, chat.appendStream or chat.stopStream.
func (s *Server) streamLocked(method string, a map[string]string, now time.Time) (map[string]any, string) {
	s.expireStreamsLocked(now)
	channel := a["channel"]
	if channel == "" {
		return nil, "channel_not_found"
	}
	if s.left[channel] {
		return nil, "not_in_channel"
	}
	text, given, bad := streamText(a)
	if bad {
		return nil, "invalid_chunks"
	}
	if len([]rune(text)) > MaxStreamText {
		return nil, "msg_too_long"
	}
	if method == "chat.startStream" {
		if a["thread_ts"] == "" {
			return nil, "invalid_arguments" // streams are replies in a thread
		}
		if !s.isDMLocked(channel) {
			if a["recipient_user_id"] == "" {
				return nil, "missing_recipient_user_id"
			}
			if a["recipient_team_id"] == "" {
				return nil, "missing_recipient_team_id"
			}
		}
		m := &Message{Channel: channel, TS: s.nextTSLocked(), ThreadTS: a["thread_ts"],
			User: BotUserID, BotID: BotID, Text: text, Streaming: true, streamAt: now,
			Recipient: a["recipient_user_id"]}
		s.msgs = append(s.msgs, m)
		return map[string]any{"channel": m.Channel, "ts": m.TS}, ""
	}
	m := s.findLocked(channel, a["ts"])
	switch {
	case m == nil:
		return nil, "message_not_found"
	case m.BotID != BotID:
		return nil, "cant_update_message"
	case !m.Streaming:
		return nil, "message_not_in_streaming_state"
	case method == "chat.appendStream" && (!given || text == ""):
		return nil, "invalid_arguments" // markdown_text is required
	case len([]rune(m.Text))+len([]rune(text)) > MaxStreamText:
		return nil, "msg_too_long"
	}
	m.Text += text
	m.Appends++
	m.streamAt = now
	if method == "chat.stopStream" {
		m.Streaming = false
		if m.Text == "" {
			m.Text = " "
		}
	}
	return map[string]any{"channel": m.Channel, "ts": m.TS}, ""
}
