package slacktest

import (
	"encoding/json"
	"strings"
	"time"
)

// DefaultStatusTimeout is how long Slack shows a status set with
// assistant.threads.setStatus when no message is sent meanwhile, unless
// Options.StatusTimeout says otherwise.
const DefaultStatusTimeout = 2 * time.Minute

// MaxSuggestedPrompts is the most prompts assistant.threads.setSuggestedPrompts
// takes.
const MaxSuggestedPrompts = 4

// AssistantThread is a thread of the app's split view (Agents & AI Apps):
// the thread Slack opens in the DM with the bot when someone opens the
// app's container, as the fake keeps it.
type AssistantThread struct {
	Channel string // the DM with the bot, "D..."
	TS      string // the thread's root
	User    string
	// Viewing is the channel the user has open beside the container, as
	// the latest assistant_thread_started or _context_changed event said.
	Viewing string
	Title   string   // set with assistant.threads.setTitle
	Prompts []Prompt // set with assistant.threads.setSuggestedPrompts
	// PromptsTitle is the title of the prompts' list.
	PromptsTitle string
}

// Prompt is one suggested prompt.
type Prompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// status is a thread's status line.
type status struct {
	text string
	at   time.Time
}

// OpenAssistantThread does what Slack does when user opens the app's split
// view while looking at channel viewing: it starts a thread in the DM dm
// with the bot (its root a message of subtype assistant_app_thread) and
// pushes assistant_thread_started with the context. It returns the
// delivery and the thread's ts.
func (s *Server) OpenAssistantThread(user, dm, viewing string) (Delivery, string, error) {
	s.mu.Lock()
	ts := s.nextTSLocked()
	s.msgs = append(s.msgs, &Message{Channel: dm, TS: ts, User: BotUserID, Text: "New chat", SubType: "assistant_app_thread"})
	s.assistant[dm+"/"+ts] = &AssistantThread{Channel: dm, TS: ts, User: user, Viewing: viewing}
	s.mu.Unlock()
	d, err := s.pushAssistantEvent("assistant_thread_started", user, dm, ts, viewing)
	return d, ts, err
}

// ChangeAssistantContext pushes assistant_thread_context_changed, as when
// the user with the split view open at thread ts of dm opens channel
// viewing.
func (s *Server) ChangeAssistantContext(user, dm, ts, viewing string) (Delivery, error) {
	s.mu.Lock()
	if t := s.assistant[dm+"/"+ts]; t != nil {
		t.Viewing = viewing
	}
	s.mu.Unlock()
	return s.pushAssistantEvent("assistant_thread_context_changed", user, dm, ts, viewing)
}

func (s *Server) pushAssistantEvent(kind, user, dm, ts, viewing string) (Delivery, error) {
	s.mu.Lock()
	eventID := s.nextIDLocked("Ev")
	eventTS := s.nextTSLocked()
	s.mu.Unlock()
	inner := map[string]any{"type": kind, "event_ts": eventTS, "assistant_thread": map[string]any{
		"user_id": user, "channel_id": dm, "thread_ts": ts,
		"context": map[string]any{"channel_id": viewing, "team_id": TeamID, "enterprise_id": nil},
	}}
	payload := map[string]any{"token": "verification", "team_id": TeamID, "api_app_id": AppID,
		"type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(),
		"event": inner, "authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}}}
	return s.push(Delivery{EventID: eventID, TS: ts, kind: "events_api", payload: payload})
}

// Assistant returns the split-view thread ts of dm.
func (s *Server) Assistant(dm, ts string) (AssistantThread, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.assistant[dm+"/"+ts]
	if t == nil {
		return AssistantThread{}, false
	}
	return *t, true
}

// Status returns the status line shown in the thread ts of channel: the
// latest set with assistant.threads.setStatus, "" once cleared, once a
// message was posted in the thread since, or once it is older than
// Options.StatusTimeout (Slack's two minutes).
func (s *Server) Status(channel, ts string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(channel+"/"+ts, time.Now())
}

func (s *Server) statusLocked(key string, now time.Time) string {
	st, ok := s.statuses[key]
	if !ok {
		return ""
	}
	timeout := s.opts.StatusTimeout
	if timeout <= 0 {
		timeout = DefaultStatusTimeout
	}
	if now.Sub(st.at) > timeout {
		delete(s.statuses, key)
		return ""
	}
	return st.text
}

// postedInThreadLocked clears the status of the thread a message of the
// bot's was just posted in, as Slack does.
func (s *Server) postedInThreadLocked(channel, thread string) {
	if thread != "" {
		delete(s.statuses, channel+"/"+thread)
	}
}

// assistantLocked runs the assistant.threads methods.
func (s *Server) assistantLocked(method string, a map[string]string, now time.Time) (map[string]any, string) {
	channel, ts := a["channel_id"], a["thread_ts"]
	if channel == "" {
		return nil, "channel_not_found"
	}
	if s.left[channel] {
		return nil, "not_in_channel"
	}
	switch method {
	case "assistant.threads.setStatus":
		// Any thread the bot can write in: in channels too, with chat:write.
		if ts == "" || s.findLocked(channel, ts) == nil {
			return nil, "invalid_thread_ts"
		}
		text, given := a["status"]
		if !given {
			return nil, "invalid_arguments" // status is required; "" clears
		}
		if text == "" {
			delete(s.statuses, channel+"/"+ts)
		} else {
			s.statuses[channel+"/"+ts] = status{text: text, at: now}
		}
		return map[string]any{}, ""
	case "assistant.threads.setTitle", "assistant.threads.setSuggestedPrompts":
		t := s.assistant[channel+"/"+ts]
		if t == nil {
			return nil, "invalid_thread_ts" // only split-view threads
		}
		if method == "assistant.threads.setTitle" {
			title := strings.TrimSpace(a["title"])
			if title == "" {
				return nil, "invalid_arguments"
			}
			t.Title = title
			return map[string]any{}, ""
		}
		var prompts []map[string]any
		if json.Unmarshal([]byte(a["prompts"]), &prompts) != nil || len(prompts) == 0 || len(prompts) > MaxSuggestedPrompts {
			return nil, "invalid_arguments"
		}
		var got []Prompt
		for _, p := range prompts {
			title, _ := p["title"].(string)
			msg, _ := p["message"].(string)
			if len(p) != 2 || strings.TrimSpace(title) == "" || strings.TrimSpace(msg) == "" {
				return nil, "invalid_arguments"
			}
			got = append(got, Prompt{Title: title, Message: msg})
		}
		t.Prompts, t.PromptsTitle = got, a["title"]
		return map[string]any{}, ""
	}
	return nil, "unknown_method"
}
