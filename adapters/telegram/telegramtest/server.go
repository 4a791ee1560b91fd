// Package telegramtest is a fake Telegram Bot API for tests: a real HTTP
// server on 127.0.0.1 that speaks the Bot API's form-encoded requests and
// {"ok":...} answers, holds chats and messages, serves long polling, file
// downloads and drafts, records every call, and can answer with scripted
// failures (429 with retry_after, HTML parse errors, 5xx) or enforce
// Telegram's rate limits.
package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure a Server. The zero value is a bot "golem_bot" with
// token "123:TEST" and no rate enforcement.
type Options struct {
	Token       string
	BotID       int64
	BotUsername string
	// EnforceRates holds the bot to Telegram's flood limits, each a token
	// bucket (see Rates): every message call into a chat (sendMessage,
	// editMessageText, sendMessageDraft) takes a token of the chat's
	// bucket, a group's also one of its per-minute bucket, and every
	// request but getUpdates, getMe, getFile and setMyCommands one of the
	// bot's. A call that finds a bucket empty is answered 429 with
	// retry_after (whole seconds, rounded up) and takes no token; when the
	// chat's own budget refused it, every call into that chat is refused
	// until retry_after has passed, as Telegram does.
	EnforceRates bool
	// PrivacyMode is Telegram's default for bots: in a group the bot gets
	// only the messages for it (a command, bare or /cmd@thisbot, a
	// mention of it, a reply to its message); the others are posted in the
	// chat, where they can be replied to, but reach no update. Off: the
	// bot gets every message, as after BotFather's /setprivacy Disable.
	PrivacyMode bool
	// PerChatInterval refills a chat's bucket, which holds PerChatBurst
	// tokens: default one call a second, burst 1.
	PerChatInterval time.Duration
	PerChatBurst    int
	// GroupPerMinute bounds message calls into a group (a negative chat
	// id) in any 60 seconds; default 20.
	GroupPerMinute int
	// GlobalPerSecond refills the bot's bucket, which holds GlobalBurst
	// tokens: default 30 a second, burst 30.
	GlobalPerSecond int
	GlobalBurst     int
	// Clock, when set, is the fake's time for rate enforcement and for
	// the times it records, so a test can step time instead of sleeping.
	Clock func() time.Time
}

// Call is one recorded request.
type Call struct {
	Method string
	Params url.Values
	At     time.Time
	// Limited says rate enforcement answered it 429.
	Limited bool
}

// Message is a message the fake holds, as a user would see it.
type Message struct {
	Chat      int64
	ID        int64
	Thread    int64  // message_thread_id; 0 if none
	ReplyTo   int64  // reply_to_message_id; 0 if none
	FromBot   bool   // sent by the bot
	Text      string // the visible text (HTML tags removed)
	Raw       string // the text as sent
	ParseMode string
	Edits     int       // successful edits
	At        time.Time // when it was posted (by the fake's clock)
	File      *SentFile // the photo or document of a sendPhoto or sendDocument
	From      User      // who sent a pushed message; zero for the bot's
	// Reactions holds the bot's reaction on the message
	// (setMessageReaction): at most one emoji.
	Reactions []string
	// Mentions are whom the bot's message would notify, as Telegram finds
	// them: "@name" for each @username in its visible text that is not
	// inside a word, "tg://user?id=N" for each link to a user.
	Mentions []string

	obj map[string]any // a pushed message as the Bot API shows it, without its reply
}

// Failure is a scripted error answer.
type Failure struct {
	HTMLOnly   bool // only for requests with parse_mode HTML
	Code       int  // HTTP status and error_code
	Desc       string
	RetryAfter int // parameters.retry_after, for 429
	// Hang holds the request unanswered until the client gives up (a
	// connection that stalls); Code and Desc are then unused.
	Hang bool
	// Landed runs the method before answering with the failure, as
	// Telegram may when it fails late: a sendMessage answered 502 or left
	// hanging has posted its message all the same.
	Landed bool
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	opts Options
	ts   *httptest.Server
	// URL is the base to give the adapter (its api_url).
	URL string

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every change
	calls        []Call
	updates      []json.RawMessage
	updateIDs    []int64
	nextUpd      int64
	nextCallback int
	chats        map[int64]*chat
	files        map[string]file
	failures     []failure
	commands     string
	drafts       map[int64][]string
	rates        map[int64]*chatRates
	global       bucket
	tooMany      int
	// longPoll is the getUpdates waiting for updates, if any; a newer one
	// ends it with a 409 (see getUpdates).
	longPoll     *longPoll
	nextConflict time.Time // a 409 before it is held 3 s first
	conflicts    int
}

// longPoll is a getUpdates waiting for updates; aborted is closed when a
// newer getUpdates has taken its place.
type longPoll struct{ aborted chan struct{} }

// Conflict is the Bot API's answer to a long poll that a newer getUpdates
// of the same bot ended.
const Conflict = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"

type chat struct {
	typ      string
	nextID   int64
	messages map[int64]*Message
	order    []int64
}

type file struct {
	path string
	data []byte
}

// New starts a fake and closes it when tb ends.
func New(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Token == "" {
		opts.Token = "123:TEST"
	}
	if opts.BotID == 0 {
		opts.BotID = 123
	}
	if opts.BotUsername == "" {
		opts.BotUsername = "golem_bot"
	}
	if opts.PerChatInterval == 0 {
		opts.PerChatInterval = time.Second
	}
	if opts.PerChatBurst == 0 {
		opts.PerChatBurst = 1
	}
	if opts.GroupPerMinute == 0 {
		opts.GroupPerMinute = 20
	}
	if opts.GlobalPerSecond == 0 {
		opts.GlobalPerSecond = 30
	}
	if opts.GlobalBurst == 0 {
		opts.GlobalBurst = opts.GlobalPerSecond
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Server{
		opts:    opts,
		changed: make(chan struct{}),
		nextUpd: 1000,
		chats:   map[int64]*chat{},
		files:   map[string]file{},
		drafts:  map[int64][]string{},
		rates:   map[int64]*chatRates{},
	}
	s.global = fullBucket(time.Second/time.Duration(opts.GlobalPerSecond), opts.GlobalBurst, opts.Clock())
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.ts.URL
	tb.Cleanup(s.ts.Close)
	return s
}

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.opts.Token }

// BotUsername is the bot's username, without '@'.
func (s *Server) BotUsername() string { return s.opts.BotUsername }

// BotID is the bot's user id.
func (s *Server) BotID() int64 { return s.opts.BotID }

// Close stops the server now (tests of reconnection use it).
func (s *Server) Close() { s.ts.CloseClientConnections(); s.ts.Close() }

// failure is a scripted Failure and the method it applies to.
type failure struct {
	method string
	Failure
}

// Fail makes the next n calls of method ("" for any but getUpdates and
// getMe) answer with f, before any other check.
func (s *Server) Fail(method string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{method, f})
	}
}

// Calls returns the recorded requests of method ("" for all), oldest first.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns copies of the messages of chatID in posting order.
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil {
		return nil
	}
	out := make([]Message, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, *c.messages[id])
	}
	return out
}

// BotMessages returns the bot's messages in chatID, in posting order.
func (s *Server) BotMessages(chatID int64) []Message {
	var out []Message
	for _, m := range s.Messages(chatID) {
		if m.FromBot {
			out = append(out, m)
		}
	}
	return out
}

// Commands returns the JSON of the last setMyCommands.
func (s *Server) Commands() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands
}

// Drafts returns the texts of the drafts sent to chatID, in order.
func (s *Server) Drafts(chatID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.drafts[chatID]...)
}

// RateLimited is how many 429 answers rate enforcement gave (scripted
// failures not counted).
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tooMany
}

// Changed returns a channel closed at the next change of the fake's state
// (a call, a message, an update).
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Wait waits until cond holds or timeout passes, checking it after every
// change of the fake's state, and reports whether it held. cond runs
// without the fake's lock, so it may call the fake's methods.
func (s *Server) Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := s.Changed()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

// WaitUntil is Wait that fails tb, naming what it waited for, when cond
// never held.
func (s *Server) WaitUntil(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !s.Wait(timeout, cond) {
		tb.Fatalf("telegramtest: timed out after %v waiting for %s", timeout, what)
	}
}

// notifyLocked wakes waiters; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeErr(w, 404, "Not Found", 0)
		return
	}
	if token != s.opts.Token {
		writeErr(w, 401, "Unauthorized", 0)
		return
	}
	params, up, err := readParams(r)
	if err != nil {
		writeErr(w, 400, "Bad Request: "+err.Error(), 0)
		return
	}
	now := s.opts.Clock()
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params, At: now})
	s.notifyLocked()
	if after, limited := s.limitLocked(method, params, now); limited {
		s.tooMany++
		s.calls[len(s.calls)-1].Limited = true
		s.mu.Unlock()
		writeErr(w, 429, fmt.Sprintf("Too Many Requests: retry after %d", after), after)
		return
	}
	// A scripted failure happens past the rate limits: the call reached
	// Telegram and counted, as a real 5xx may have.
	if f, ok := s.takeFailureLocked(method, params); ok {
		if f.Landed {
			s.answerLocked(method, params, up)
			s.notifyLocked()
		}
		s.mu.Unlock()
		if f.Hang {
			<-r.Context().Done()
			return
		}
		writeErr(w, f.Code, f.Desc, f.RetryAfter)
		return
	}
	s.mu.Unlock()

	if method == "getUpdates" {
		s.getUpdates(w, r.Context(), params)
		return
	}
	s.mu.Lock()
	result, code, desc := s.answerLocked(method, params, up)
	s.notifyLocked()
	s.mu.Unlock()
	if code != 0 {
		writeErr(w, code, desc, 0)
		return
	}
	writeOK(w, result)
}

func (s *Server) takeFailureLocked(method string, p url.Values) (Failure, bool) {
	for i, f := range s.failures {
		if f.method == "" && (method == "getUpdates" || method == "getMe") {
			continue
		}
		if f.method != "" && f.method != method {
			continue
		}
		if f.HTMLOnly && !strings.EqualFold(p.Get("parse_mode"), "HTML") {
			continue
		}
		s.failures = append(s.failures[:i], s.failures[i+1:]...)
		return f.Failure, true
	}
	return Failure{}, false
}

// limitLocked applies rate enforcement; a limited request consumes no
// budget.
func (s *Server) limitLocked(method string, p url.Values, now time.Time) (retryAfter int, limited bool) {
	switch method {
	case "getUpdates", "getMe", "getFile", "setMyCommands":
		return 0, false
	}
	if !s.opts.EnforceRates {
		return 0, false
	}
	var cr *chatRates
	if isMessageCall(method) {
		id, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
		cr = s.chatRatesLocked(id, now)
		if now.Before(cr.blockedUntil) {
			return secondsCeil(cr.blockedUntil.Sub(now)), true
		}
		wait := cr.chat.wait(now)
		if cr.group != nil {
			wait = max(wait, cr.group.wait(now))
		}
		if wait > 0 {
			after := secondsCeil(wait)
			cr.blockedUntil = now.Add(time.Duration(after) * time.Second)
			return after, true
		}
	}
	if wait := s.global.wait(now); wait > 0 {
		return secondsCeil(wait), true
	}
	s.global.take()
	if cr != nil {
		cr.chat.take()
		if cr.group != nil {
			cr.group.take(now)
		}
	}
	return 0, false
}

// isMessageCall reports whether method posts or changes a message in a
// chat, and so takes from the chat's budget.
func isMessageCall(method string) bool {
	switch method {
	case "sendMessage", "editMessageText", "sendMessageDraft", "sendPhoto", "sendDocument":
		return true
	}
	return false
}

// chatRates are one chat's buckets and the end of its current refusal.
type chatRates struct {
	chat         bucket
	group        *window // nil for a private chat
	blockedUntil time.Time
}

func (s *Server) chatRatesLocked(id int64, now time.Time) *chatRates {
	cr := s.rates[id]
	if cr == nil {
		cr = &chatRates{chat: fullBucket(s.opts.PerChatInterval, s.opts.PerChatBurst, now)}
		if id < 0 {
			cr.group = &window{span: time.Minute, n: s.opts.GroupPerMinute}
		}
		s.rates[id] = cr
	}
	return cr
}

// bucket is a token bucket: one token every `every`, at most burst.
type bucket struct {
	every  time.Duration
	burst  int
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func fullBucket(every time.Duration, burst int, now time.Time) bucket {
	return bucket{every: every, burst: burst, tokens: float64(burst), at: now}
}

// wait brings the bucket up to now and returns how long until it holds a
// token (0: it holds one).
func (b *bucket) wait(now time.Time) time.Duration {
	if now.After(b.at) {
		b.tokens = min(float64(b.burst), b.tokens+float64(now.Sub(b.at))/float64(b.every))
		b.at = now
	}
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(b.every))
}

// take uses one token; wait must have returned 0 just before.
func (b *bucket) take() { b.tokens-- }

// window admits at most n calls in any span.
type window struct {
	span  time.Duration
	n     int
	times []time.Time // of the admitted calls within the last span
}

// wait returns how long until the window admits a call (0: now).
func (w *window) wait(now time.Time) time.Duration {
	for len(w.times) > 0 && !w.times[0].After(now.Add(-w.span)) {
		w.times = w.times[1:]
	}
	if len(w.times) < w.n {
		return 0
	}
	return w.times[0].Add(w.span).Sub(now)
}

func (w *window) take(now time.Time) { w.times = append(w.times, now) }

func secondsCeil(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// getUpdates answers at once with the updates from offset on, or, with a
// timeout and none to give, waits for one. As the Bot API does, only one
// long poll of a bot waits at a time: a newer one takes its place and the
// waiting one is answered 409 Conflict, at once if no conflict was
// answered in the last 3 s and after 3 s otherwise (telegram-bot-api's
// abort_long_poll and fail_query_conflict). A poll whose client goes away
// stops waiting.
func (s *Server) getUpdates(w http.ResponseWriter, ctx context.Context, p url.Values) {
	offset, _ := strconv.ParseInt(p.Get("offset"), 10, 64)
	limit, _ := strconv.Atoi(p.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p.Get("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	me := &longPoll{aborted: make(chan struct{})}
	defer func() {
		s.mu.Lock()
		if s.longPoll == me {
			s.longPoll = nil
		}
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		select {
		case <-me.aborted: // a newer poll took its place: it never takes it back
			s.mu.Unlock()
			s.conflict(w, ctx)
			return
		default:
		}
		if offset != 0 {
			// Updates below offset are confirmed and forgotten.
			i := 0
			for i < len(s.updateIDs) && s.updateIDs[i] < offset {
				i++
			}
			s.updates, s.updateIDs = s.updates[i:], s.updateIDs[i:]
		}
		if len(s.updates) > 0 || timeout <= 0 {
			n := min(limit, len(s.updates))
			out := append([]json.RawMessage{}, s.updates[:n]...)
			s.mu.Unlock()
			writeOK(w, out)
			return
		}
		if s.longPoll != me {
			if s.longPoll != nil {
				close(s.longPoll.aborted)
			}
			s.longPoll = me
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			writeOK(w, []json.RawMessage{})
			return
		case <-me.aborted:
			s.conflict(w, ctx)
			return
		case <-ctx.Done():
			return
		}
	}
}

// conflict answers a long poll that a newer one ended.
func (s *Server) conflict(w http.ResponseWriter, ctx context.Context) {
	s.mu.Lock()
	now := time.Now()
	held := now.Before(s.nextConflict)
	if !held {
		s.nextConflict = now.Add(3 * time.Second)
	}
	s.mu.Unlock()
	if held {
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
			return
		}
	}
	s.mu.Lock()
	s.conflicts++
	s.notifyLocked()
	s.mu.Unlock()
	writeErr(w, http.StatusConflict, Conflict, 0)
}

// Conflicts is how many long polls were answered 409 Conflict because a
// newer getUpdates took their place.
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

func (s *Server) serveFile(w http.ResponseWriter, rest string) {
	token, path, ok := strings.Cut(rest, "/")
	if !ok || token != s.opts.Token {
		http.NotFound(w, nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		if f.path == path {
			_, _ = w.Write(f.data)
			return
		}
	}
	http.Error(w, "not found", http.StatusNotFound)
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, code int, desc string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
