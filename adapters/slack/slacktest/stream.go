package slacktest

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
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

// Task is one task card of a streamed message, as its task_update chunks
// left it.
type Task struct {
	ID, Title, Status, Details, Output string
	Updates                            int // task_update chunks for it
}

// MaxTaskText is the most characters a task_update's details or output
// take.
const MaxTaskText = 256

// chunkFields are the fields each chunk type may carry; type is the only
// one all share.
var chunkFields = map[string]map[string]bool{
	"markdown_text": {"type": true, "text": true},
	"task_update":   {"type": true, "id": true, "title": true, "status": true, "details": true, "output": true, "sources": true},
	"plan_update":   {"type": true, "title": true},
	"blocks":        {"type": true, "blocks": true},
}

// taskStatuses are the statuses a task_update may have.
var taskStatuses = map[string]bool{"pending": true, "in_progress": true, "complete": true, "error": true}

// streamContent reads what a streaming call carries: markdown_text or
// chunks (not both), as strictly as Slack: every chunk of a known type
// with its fields only, markdown_text chunks with text, task_update chunks
// with an id, a title and a known status, their details and output within
// MaxTaskText. It returns the markdown, the task updates in order, whether
// anything was given, and the error code of a call that is refused.
func streamContent(a map[string]string) (text string, tasks []Task, given bool, errCode string) {
	text, given = a["markdown_text"]
	c, hasChunks := a["chunks"]
	if !hasChunks {
		return text, nil, given, ""
	}
	if given {
		return "", nil, true, "invalid_arguments" // markdown_text or chunks, not both
	}
	var chunks []map[string]any
	if json.Unmarshal([]byte(c), &chunks) != nil {
		return "", nil, true, "invalid_chunks"
	}
	str := func(ch map[string]any, k string) (string, bool) {
		v, ok := ch[k].(string)
		return v, ok
	}
	for _, ch := range chunks {
		kind, _ := str(ch, "type")
		fields, known := chunkFields[kind]
		if !known {
			return "", nil, true, "invalid_chunks"
		}
		for k := range ch {
			if !fields[k] {
				return "", nil, true, "invalid_chunks"
			}
		}
		switch kind {
		case "markdown_text":
			t, ok := str(ch, "text")
			if !ok || t == "" {
				return "", nil, true, "invalid_chunks"
			}
			text += t
		case "task_update":
			var t Task
			var ok [3]bool
			t.ID, ok[0] = str(ch, "id")
			t.Title, ok[1] = str(ch, "title")
			t.Status, ok[2] = str(ch, "status")
			t.Details, _ = str(ch, "details")
			t.Output, _ = str(ch, "output")
			if !ok[0] || !ok[1] || !ok[2] || t.ID == "" || strings.TrimSpace(t.Title) == "" || !taskStatuses[t.Status] ||
				len([]rune(t.Details)) > MaxTaskText || len([]rune(t.Output)) > MaxTaskText {
				return "", nil, true, "invalid_chunks"
			}
			for _, k := range []string{"details", "output"} {
				if v, in := ch[k]; in {
					if _, isStr := v.(string); !isStr {
						return "", nil, true, "invalid_chunks"
					}
				}
			}
			tasks = append(tasks, t)
		case "plan_update":
			if t, ok := str(ch, "title"); !ok || t == "" {
				return "", nil, true, "invalid_chunks"
			}
		}
	}
	return text, tasks, len(chunks) > 0, ""
}

// applyTasksLocked records task updates on m.
func applyTasksLocked(m *Message, tasks []Task) {
	for _, t := range tasks {
		i := slices.IndexFunc(m.Tasks, func(have Task) bool { return have.ID == t.ID })
		if i < 0 {
			m.Tasks = append(m.Tasks, Task{ID: t.ID})
			i = len(m.Tasks) - 1
		}
		have := &m.Tasks[i]
		have.Title, have.Status, have.Updates = t.Title, t.Status, have.Updates+1
		if t.Details != "" {
			have.Details = t.Details
		}
		if t.Output != "" {
			have.Output = t.Output
		}
	}
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
	text, tasks, given, errCode := streamContent(a)
	if errCode != "" {
		return nil, errCode
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
		mode := a["task_display_mode"]
		if mode != "" && mode != "timeline" && mode != "plan" {
			return nil, "invalid_arguments"
		}
		m := &Message{Channel: channel, TS: s.nextTSLocked(), ThreadTS: a["thread_ts"],
			User: BotUserID, BotID: BotID, Text: text, Streaming: true, streamAt: now,
			Recipient: a["recipient_user_id"], TaskDisplay: cmp.Or(mode, "timeline")}
		applyTasksLocked(m, tasks)
		s.msgs = append(s.msgs, m)
		s.postedInThreadLocked(channel, m.ThreadTS)
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
	case method == "chat.appendStream" && (!given || text == "" && len(tasks) == 0):
		return nil, "invalid_arguments" // markdown_text (or chunks) is required
	case len([]rune(m.Text))+len([]rune(text)) > MaxStreamText:
		return nil, "msg_too_long"
	}
	m.Text += text
	applyTasksLocked(m, tasks)
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
