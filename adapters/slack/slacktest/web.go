package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxText is Slack's hard limit on a message's text.
const maxText = 40000

// emojiName is what reactions.add and reactions.remove take as a name (an
// emoji's short name without colons, "eyes"); anything else is
// invalid_name, as Slack answers.
var emojiName = regexp.MustCompile(`^[a-z0-9_+'-]+(::skin-tone-[2-6])?$`)

// serveAPI answers POST /api/{method}.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	args, token := parseArgs(r)
	if !s.hold(r.Context(), method, args) {
		return // the client gave up on a held call
	}
	a, hang := s.answerAPI(method, args, token)
	if hang {
		<-r.Context().Done() // the client gave up
		return
	}
	if a.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", fmt.Sprint(a.retryAfter))
	}
	if a.html {
		http.Error(w, "<html>upstream trouble</html>", a.status)
		return
	}
	writeJSON(w, a.status, a.body)
}

// hold waits while a call of method is held by a scripted Failure.Until,
// and reports whether it may now be answered; a call the client gave up
// on meanwhile is recorded unanswered.
func (s *Server) hold(ctx context.Context, method string, args map[string]string) bool {
	s.mu.Lock()
	q := s.faults[method]
	if len(q) == 0 || q[0].Until == nil {
		s.mu.Unlock()
		return true
	}
	release := q[0].Until
	s.faults[method] = q[1:]
	s.holding[method]++
	s.notifyLocked()
	s.mu.Unlock()
	answered := true
	select {
	case <-release:
	case <-ctx.Done():
		answered = false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding[method]--
	if !answered {
		s.calls = append(s.calls, Call{Method: method, Args: args, At: time.Now()})
	}
	s.notifyLocked()
	return answered
}

// answer is what serveAPI writes.
type answer struct {
	status     int
	retryAfter int // seconds, sent as Retry-After with a 429
	html       bool
	body       map[string]any
}

// answerAPI runs one call: a scripted fault or the method itself. A fault
// with Landed runs the method first (a message is stored) and answers the
// fault anyway; hang holds the answer until the client gives up.
func (s *Server) answerAPI(method string, args map[string]string, token string) (a answer, hang bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	call := Call{Method: method, Args: args, At: time.Now()}
	defer func() { s.calls = append(s.calls, call) }()
	reply := func(status int, errCode string) answer {
		call.Status, call.Error = status, errCode
		if errCode != "" {
			return answer{status: status, body: map[string]any{"ok": false, "error": errCode}}
		}
		return answer{status: status, body: map[string]any{"ok": true}}
	}

	var fault *Failure
	if q := s.faults[method]; len(q) > 0 {
		fault = &q[0]
		s.faults[method] = q[1:]
		if !fault.Landed {
			return s.faultLocked(*fault, reply), fault.Hang
		}
	}

	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	if token != want {
		return reply(http.StatusOK, "invalid_auth"), false
	}

	if need := s.neededScopeLocked(method, args); need != "" {
		a := reply(http.StatusOK, "missing_scope")
		a.body["needed"], a.body["provided"] = need, strings.Join(s.scopes, ",")
		return a, false
	}

	if method == "chat.update" {
		if wait, over := s.overUpdateBudgetLocked(call.At); over {
			a := reply(http.StatusTooManyRequests, "ratelimited")
			a.retryAfter = wait
			return a, false
		}
	}

	if wait, over := s.overStreamLimitLocked(method, call.At); over {
		a := reply(http.StatusTooManyRequests, "ratelimited")
		a.retryAfter = wait
		return a, false
	}

	res, errCode := s.apiLocked(method, args, call.At)
	if errCode != "" {
		return reply(http.StatusOK, errCode), false
	}
	if method == "chat.update" {
		s.updates = append(s.updates, call.At)
	}
	s.noteStreamCallLocked(method, call.At)
	if fault != nil { // it landed, and the client hears of trouble
		return s.faultLocked(*fault, reply), fault.Hang
	}
	a = reply(http.StatusOK, "")
	for k, v := range res {
		a.body[k] = v
	}
	return a, false
}

// faultLocked is the answer a fault scripts.
func (s *Server) faultLocked(f Failure, reply func(int, string) answer) answer {
	switch {
	case f.Hang:
		reply(0, "") // recorded as unanswered
		return answer{}
	case f.Status == http.StatusTooManyRequests:
		a := reply(f.Status, "ratelimited")
		a.retryAfter = f.RetryAfter
		return a
	case f.Status >= 500:
		a := reply(f.Status, "")
		a.html = true
		return a
	default:
		return reply(http.StatusOK, f.Error)
	}
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
func (s *Server) apiLocked(method string, a map[string]string, now time.Time) (map[string]any, string) {
	switch method {
	case "chat.startStream", "chat.appendStream", "chat.stopStream":
		return s.streamLocked(method, a, now)
	case "assistant.threads.setStatus", "assistant.threads.setTitle", "assistant.threads.setSuggestedPrompts":
		return s.assistantLocked(method, a, now)
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
		if s.left[a["channel"]] {
			return nil, "not_in_channel"
		}
		if a["text"] == "" {
			return nil, "no_text"
		}
		if len([]rune(a["text"])) > maxText {
			return nil, "msg_too_long"
		}
		m := &Message{Channel: a["channel"], TS: s.nextTSLocked(), ThreadTS: a["thread_ts"],
			User: BotUserID, BotID: BotID, Text: a["text"], Blocks: a["blocks"], Metadata: a["metadata"]}
		if m.Metadata != "" && !json.Valid([]byte(m.Metadata)) {
			return nil, "invalid_metadata_format"
		}
		s.msgs = append(s.msgs, m)
		s.postedInThreadLocked(m.Channel, m.ThreadTS)
		return map[string]any{"channel": m.Channel, "ts": m.TS, "message": wireMessage(m)}, ""
	case "chat.update":
		s.expireStreamsLocked(now)
		m := s.findLocked(a["channel"], a["ts"])
		switch {
		case m == nil:
			return nil, "message_not_found"
		case m.BotID != BotID:
			return nil, "cant_update_message"
		case m.Streaming:
			return nil, "streaming_state_conflict"
		case a["text"] == "":
			return nil, "no_text"
		case len([]rune(a["text"])) > maxText:
			return nil, "msg_too_long"
		}
		m.Text = a["text"]
		if b, ok := a["blocks"]; ok {
			m.Blocks = b
		}
		m.Edits++
		return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text}, ""
	case "chat.postEphemeral":
		if a["channel"] == "" || a["user"] == "" {
			return nil, "channel_not_found"
		}
		if a["text"] == "" && a["blocks"] == "" {
			return nil, "no_text"
		}
		return map[string]any{"message_ts": s.nextTSLocked()}, ""
	case "reactions.add", "reactions.remove":
		if !emojiName.MatchString(a["name"]) {
			return nil, "invalid_name"
		}
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
	case "conversations.history":
		return s.historyLocked(a)
	case "conversations.replies":
		return s.repliesLocked(a)
	case "users.info":
		return s.userInfoLocked(a)
	case "conversations.info":
		return s.channelInfoLocked(a)
	case "files.getUploadURLExternal", "files.completeUploadExternal":
		return s.uploadLocked(method, a)
	case "files.info":
		f, ok := s.files[a["file"]]
		if !ok {
			return nil, "file_not_found"
		}
		return map[string]any{"file": f.wire(s.URL)}, ""
	}
	return nil, "unknown_method"
}

// inRange reports whether ts lies between the oldest and latest
// arguments of a history call.
func inRange(ts string, a map[string]string) bool {
	t, incl := micros(ts), a["inclusive"] == "true" || a["inclusive"] == "1"
	if o := a["oldest"]; o != "" && (t < micros(o) || t == micros(o) && !incl) {
		return false
	}
	if l := a["latest"]; l != "" && (t > micros(l) || t == micros(l) && !incl) {
		return false
	}
	return true
}

// micros parses a Slack timestamp, "1700000000.000100", into microseconds.
func micros(ts string) int64 {
	sec, frac, _ := strings.Cut(ts, ".")
	frac = (frac + "000000")[:6]
	s, _ := strconv.ParseInt(sec, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	return s*1e6 + f
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
	if m.SubType != "" {
		w["subtype"] = m.SubType
	}
	if len(m.Files) > 0 {
		w["files"] = m.Files
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
