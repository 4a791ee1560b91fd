package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// maxText is Slack's hard limit on a message's text.
const maxText = 40000

// serveAPI answers POST /api/{method}.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	args, token := parseArgs(r)

	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	call := Call{Method: method, Args: args, At: time.Now()}
	record := func(status int, errCode string) {
		call.Status, call.Error = status, errCode
		s.calls = append(s.calls, call)
	}

	if q := s.faults[method]; len(q) > 0 {
		f := q[0]
		s.faults[method] = q[1:]
		switch {
		case f.Status == http.StatusTooManyRequests:
			record(f.Status, "ratelimited")
			w.Header().Set("Retry-After", fmt.Sprint(f.RetryAfter))
			writeJSON(w, f.Status, map[string]any{"ok": false, "error": "ratelimited"})
			return
		case f.Status >= 500:
			record(f.Status, "")
			http.Error(w, "<html>upstream trouble</html>", f.Status)
			return
		default:
			record(http.StatusOK, f.Error)
			writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": f.Error})
			return
		}
	}

	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	if token != want {
		record(http.StatusOK, "invalid_auth")
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}

	if method == "chat.update" {
		if wait, over := s.overUpdateBudgetLocked(call.At); over {
			record(http.StatusTooManyRequests, "ratelimited")
			w.Header().Set("Retry-After", fmt.Sprint(wait))
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
	}

	res, errCode := s.apiLocked(method, args)
	if errCode != "" {
		record(http.StatusOK, errCode)
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": errCode})
		return
	}
	if method == "chat.update" {
		s.updates = append(s.updates, call.At)
	}
	record(http.StatusOK, "")
	res["ok"] = true
	writeJSON(w, http.StatusOK, res)
}

// overUpdateBudgetLocked reports whether one more chat.update at now would
// exceed the per-minute budget, and if so in how many whole seconds the
// oldest call in the window leaves it.
func (s *Server) overUpdateBudgetLocked(now time.Time) (retryAfter int, over bool) {
	limit := s.opts.UpdatesPerMinute
	cut := now.Add(-time.Minute)
	i := 0
	for i < len(s.updates) && !s.updates[i].After(cut) {
		i++
	}
	s.updates = s.updates[i:]
	if limit <= 0 || len(s.updates) < limit {
		return 0, false
	}
	free := s.updates[len(s.updates)-limit].Add(time.Minute).Sub(now)
	return max(1, int(math.Ceil(free.Seconds()))), true
}

// apiLocked runs one authorized method and returns its result fields or
// an ok:false error code.
func (s *Server) apiLocked(method string, a map[string]string) (map[string]any, string) {
	switch method {
	case "auth.test":
		return map[string]any{"url": s.URL + "/", "team": "Fake", "user": "golem",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}, ""
	case "apps.connections.open":
		ticket := s.nextIDLocked("t")
		s.tickets[ticket] = true
		return map[string]any{"url": "ws" + strings.TrimPrefix(s.URL, "http") + "/link/?ticket=" + ticket}, ""
	case "chat.postMessage":
		if a["channel"] == "" {
			return nil, "channel_not_found"
		}
		if a["text"] == "" {
			return nil, "no_text"
		}
		if len([]rune(a["text"])) > maxText {
			return nil, "msg_too_long"
		}
		m := &Message{Channel: a["channel"], TS: s.nextTSLocked(), ThreadTS: a["thread_ts"],
			User: BotUserID, BotID: BotID, Text: a["text"]}
		s.msgs = append(s.msgs, m)
		return map[string]any{"channel": m.Channel, "ts": m.TS, "message": wireMessage(m)}, ""
	case "chat.update":
		m := s.findLocked(a["channel"], a["ts"])
		switch {
		case m == nil:
			return nil, "message_not_found"
		case m.BotID != BotID:
			return nil, "cant_update_message"
		case a["text"] == "":
			return nil, "no_text"
		case len([]rune(a["text"])) > maxText:
			return nil, "msg_too_long"
		}
		m.Text = a["text"]
		m.Edits++
		return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text}, ""
	case "reactions.add", "reactions.remove":
		m := s.findLocked(a["channel"], a["timestamp"])
		if m == nil {
			return nil, "message_not_found"
		}
		has := slices.Contains(m.Reactions, a["name"])
		if method == "reactions.add" {
			if has {
				return nil, "already_reacted"
			}
			m.Reactions = append(m.Reactions, a["name"])
		} else {
			if !has {
				return nil, "no_reaction"
			}
			m.Reactions = slices.DeleteFunc(m.Reactions, func(n string) bool { return n == a["name"] })
		}
		return map[string]any{}, ""
	case "conversations.replies":
		var out []map[string]any
		for _, m := range s.msgs {
			if m.Channel == a["channel"] && (m.TS == a["ts"] || m.ThreadTS == a["ts"]) {
				out = append(out, wireMessage(m))
			}
		}
		if len(out) == 0 {
			return nil, "thread_not_found"
		}
		return map[string]any{"messages": out, "has_more": false}, ""
	case "files.info":
		f, ok := s.files[a["file"]]
		if !ok {
			return nil, "file_not_found"
		}
		return map[string]any{"file": f.wire(s.URL)}, ""
	}
	return nil, "unknown_method"
}

// wireMessage is m as the Web API shows it.
func wireMessage(m *Message) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "user": m.User, "text": m.Text}
	if m.ThreadTS != "" {
		w["thread_ts"] = m.ThreadTS
	}
	if m.BotID != "" {
		w["bot_id"] = m.BotID
	}
	return w
}

// parseArgs flattens the request's query, form or JSON body into strings
// and returns the token it carries (form field or Bearer header).
func parseArgs(r *http.Request) (map[string]string, string) {
	args := map[string]string{}
	for k, v := range r.URL.Query() {
		args[k] = v[0]
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var obj map[string]any
		if json.Unmarshal(body, &obj) == nil {
			for k, v := range obj {
				if s, ok := v.(string); ok {
					args[k] = s
				} else {
					b, _ := json.Marshal(v)
					args[k] = string(b)
				}
			}
		}
	default:
		if vals, err := url.ParseQuery(string(body)); err == nil {
			for k, v := range vals {
				args[k] = v[0]
			}
		}
	}
	token := args["token"]
	delete(args, "token")
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = h
	}
	return args, token
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
