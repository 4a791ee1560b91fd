// Package discordtest is a fake Discord for tests: the REST routes a bot
// uses (interaction callbacks, webhook edits of @original and follow-ups,
// channel messages, reading a channel's history and one message, threads,
// typing, command registration) and the gateway
// over a websocket (HELLO, IDENTIFY, READY, heartbeat ACK, RESUME at the
// resume_gateway_url with replay, op 7 reconnect, op 9 invalid session,
// dropped sockets, zombie connections, dispatch of MESSAGE_CREATE and
// INTERACTION_CREATE), as strict as Discord's (see gateway.go).
//
// The server listens on 127.0.0.1 and serves the API under /api/v9, so a
// client pointed at URL() by rewriting scheme and host talks to it exactly
// as to Discord. It records every REST call with its parsed body, enforces
// the 2,000-character message limit, an optional per-channel budget (429
// with retry_after when exceeded), scripted 429s, and interaction tokens
// that expire. All methods are safe for concurrent use.
package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	BotToken  string // the token bot-token routes require, without "Bot "; default "test-token"
	AppID     string // default "100"
	BotUserID string // default "200"
	BotName   string // default "golem"

	// HeartbeatInterval is sent in HELLO; default 1s.
	HeartbeatInterval time.Duration
	// TokenLife is how long an interaction token works for webhook calls;
	// default 15 minutes, as on Discord.
	TokenLife time.Duration
	// CallbackDeadline is how long after an interaction its first response
	// is accepted; default 3 s, as on Discord.
	CallbackDeadline time.Duration
	// ChannelLimit requests per ChannelWindow are accepted per channel for
	// message creates, edits and thread starts (bot-token and webhook
	// routes alike); more answer 429. Zero: no per-channel limit.
	ChannelLimit  int
	ChannelWindow time.Duration
	// InteractionMessagesBotEditable lets the bot token edit messages that
	// were posted through an interaction webhook (as a bot in a guild can).
	// False answers 403 code 50005, so a client must post new messages once
	// the token expired.
	InteractionMessagesBotEditable bool
	// NoRateLimitHeaders leaves X-RateLimit-* off successful responses, so
	// a client learns of the per-channel limit only from 429s.
	NoRateLimitHeaders bool
}

// Call is one recorded REST request.
type Call struct {
	Method string
	Path   string // without the /api/v9 prefix, e.g. "/channels/5/messages"
	Query  url.Values
	Body   map[string]any
	// AllowedMentions is the request's allowed_mentions object (nil when
	// the request had none); for a callback it is read from "data".
	AllowedMentions map[string]any
	Status          int
	At              time.Time
	// Files are the files of a multipart request (whose JSON is its
	// payload_json part, in Body).
	Files []File
}

// Message is a message the bot (or a user) posted, as the fake holds it.
type Message struct {
	ID        string
	ChannelID string
	GuildID   string
	Content   string
	Flags     int
	AuthorID  string
	// Type is the message type: 0 default, 19 a reply, 21 the system
	// message that opens a thread started on a message (ReplyTo, in the
	// parent channel).
	Type int
	// Mentions and MentionRoles are the user and role ids a user's
	// message mentions; Attachments its files (Post).
	Mentions     []string
	MentionRoles []string
	Attachments  []Attachment
	// Interaction is the id of the interaction whose webhook posted it
	// (the original response or a follow-up); empty for channel messages.
	Interaction string
	Original    bool   // the interaction's original response
	Deferred    bool   // the original response was deferred and not yet edited
	ReplyTo     string // message_reference.message_id
	Thread      string // id of the thread started on it, if any
	Edits       int
	// Reactions are the emoji the bot reacted with, in order (a Unicode
	// emoji, or name:id).
	Reactions []string
	// Components are the message's components as last posted or edited
	// (JSON); "" or "[]" without.
	Components string
	History    []string // every content it had, oldest first
	Deleted    bool
	At         time.Time
	Files      []File // attachments the bot uploaded with it
}

// Interaction is an interaction the fake dispatched.
type Interaction struct {
	ID, Token, ChannelID, GuildID, UserID, Name string
	Created                                     time.Time
	Callback                                    int       // the callback type, 0 before one arrived
	CallbackFlags                               int       // data.flags of the callback
	CallbackAt                                  time.Time // when the callback arrived
	Original                                    string    // id of the original response message
	// Message is the message whose component was clicked (type 3).
	Message string
}

type script429 struct {
	match      func(method, path string) bool
	left       int
	retryAfter time.Duration
	global     bool
	status     int  // not 429: answer this status instead
	late       bool // the request takes effect (landed) or is held (hang) first; see Fail
	landed     bool
	until      <-chan struct{} // held until closed, then served
}

// Server is the fake Discord. Create it with New; Close it when done.
type Server struct {
	opts Options
	hs   *httptest.Server

	mu           sync.Mutex
	changed      chan struct{}
	nextID       int64
	calls        []Call
	messages     map[string]*Message
	order        []string // message ids in creation order
	interactions map[string]*Interaction
	byToken      map[string]*Interaction
	dms          map[string]bool
	threads      map[string]string // thread channel id -> parent channel id
	users        map[string]user   // the users who posted, by id: their names for author and mentions
	noHistory    map[string]bool   // channels where the bot lacks Read Message History
	names        map[string]string // channel id -> name, for GET /channels/{c}
	commands     map[string][]map[string]any
	files        map[string][]byte
	window       map[string][]time.Time
	nonces       map[string]string // channel + "/" + nonce -> message id, for enforce_nonce
	scripts      []*script429
	holding      int // requests held by a Failure.Until now
	rateLimited  int
	gw           gateway
}

// New starts a fake Discord on 127.0.0.1.
func New(opts Options) *Server {
	if opts.BotToken == "" {
		opts.BotToken = "test-token"
	}
	if opts.AppID == "" {
		opts.AppID = "100"
	}
	if opts.BotUserID == "" {
		opts.BotUserID = "200"
	}
	if opts.BotName == "" {
		opts.BotName = "golem"
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = time.Second
	}
	if opts.TokenLife <= 0 {
		opts.TokenLife = 15 * time.Minute
	}
	if opts.CallbackDeadline <= 0 {
		opts.CallbackDeadline = 3 * time.Second
	}
	if opts.ChannelWindow <= 0 {
		opts.ChannelWindow = 5 * time.Second
	}
	s := &Server{
		opts:         opts,
		changed:      make(chan struct{}),
		nextID:       1_100_000_000_000_000_000,
		messages:     map[string]*Message{},
		interactions: map[string]*Interaction{},
		byToken:      map[string]*Interaction{},
		dms:          map[string]bool{},
		threads:      map[string]string{},
		users:        map[string]user{},
		noHistory:    map[string]bool{},
		names:        map[string]string{},
		commands:     map[string][]map[string]any{},
		files:        map[string][]byte{},
		window:       map[string][]time.Time{},
		nonces:       map[string]string{},
	}
	s.gw.init()
	mux := http.NewServeMux()
	s.routes(mux)
	s.hs = httptest.NewServer(s.late(mux))
	return s
}

// URL is the server's base, "http://127.0.0.1:port"; the API lives under
// /api/v9 and the gateway at /gateway.
func (s *Server) URL() string { return s.hs.URL }

// Options returns the options in effect (with defaults filled in).
func (s *Server) Options() Options { return s.opts }

// Close stops the server and drops every gateway connection.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.gw.snapshot()
	s.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// newID returns a fresh snowflake. Call with s.mu held.
func (s *Server) newID() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// notify wakes every Wait. Call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait blocks until cond, called with the server locked, holds or the
// timeout passes; it reports whether cond held. cond must not call other
// Server methods.
func (s *Server) Wait(timeout time.Duration, cond func(v View) bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok := cond(View{s})
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// DM marks channel as a direct-message channel: messages there carry no
// guild id and threads cannot be started in it.
func (s *Server) DM(channel string) {
	s.mu.Lock()
	s.dms[channel] = true
	s.mu.Unlock()
}

// Failure scripts the answer to future requests (see Fail).
type Failure struct {
	Status     int           // 429, 500, 502, 403, ...; unused with Hang
	RetryAfter time.Duration // the retry_after of a 429
	Global     bool          // a 429 that is global (X-RateLimit-Global)
	// Hang holds the request unanswered until the client gives up (a
	// stalled connection).
	Hang bool
	// Landed lets the request take effect (a message is created, edited,
	// ...) before it fails or hangs, as Discord may when it fails late.
	Landed bool
	// Until holds the request until it is closed (or the client gives
	// up) and then serves it as usual: a slow platform. Status is unused.
	Until <-chan struct{}
}

// Fail makes the next n requests matching route answer with f, before any
// other check. A route is "METHOD /path-prefix", the path as after /api/v9
// ("PATCH /channels/c1/messages/"); a path ending in "$" must match whole
// ("POST /channels/c1/messages$"); "" matches every request.
func (s *Server) Fail(route string, n int, f Failure) {
	sc := &script429{match: routeMatch(route), left: n, retryAfter: f.RetryAfter, global: f.Global}
	switch {
	case f.Until != nil:
		sc.late, sc.until = true, f.Until
	case f.Landed || f.Hang:
		sc.late, sc.landed = true, f.Landed
		if !f.Hang {
			sc.status = f.Status
		}
	case f.Status != http.StatusTooManyRequests:
		sc.status = f.Status
	}
	s.mu.Lock()
	s.scripts = append(s.scripts, sc)
	s.mu.Unlock()
}

// routeMatch returns the matcher of a route as Fail and Calls take it.
func routeMatch(route string) func(method, path string) bool {
	method, prefix, _ := strings.Cut(route, " ")
	whole := strings.HasSuffix(prefix, "$")
	prefix = strings.TrimSuffix(prefix, "$")
	return func(m, p string) bool {
		if method != "" && m != method {
			return false
		}
		if whole {
			return p == prefix
		}
		return strings.HasPrefix(p, prefix)
	}
}

// late serves the requests that Fail scripts to land or hang, and
// hands every other one to next.
func (s *Server) late(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/api/v9")
		s.mu.Lock()
		var sc *script429
		for _, x := range s.scripts {
			if x.late && x.left > 0 && x.match(r.Method, path) {
				x.left--
				sc = x
				break
			}
		}
		s.mu.Unlock()
		if sc == nil {
			next.ServeHTTP(w, r)
			return
		}
		if sc.until != nil {
			s.mu.Lock()
			s.holding++
			s.notify()
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				s.holding--
				s.notify()
				s.mu.Unlock()
			}()
			select {
			case <-sc.until:
				next.ServeHTTP(w, r)
			case <-r.Context().Done():
			}
			return
		}
		if sc.landed {
			next.ServeHTTP(httptest.NewRecorder(), r) // the effect; its answer is lost
		} else {
			s.mu.Lock()
			s.record(r, 0)
			s.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leave
		s.mu.Lock()
		for i := len(s.calls) - 1; i >= 0; i-- {
			if c := &s.calls[i]; c.Method == r.Method && c.Path == path {
				c.Status = sc.status // 0: never answered
				break
			}
		}
		s.mu.Unlock()
		if sc.status == 0 {
			<-r.Context().Done()
			return
		}
		writeError(w, apiError{sc.status, 0, http.StatusText(sc.status)})
	})
}

// Age makes every interaction so far d older, as if golem had been away
// that long: past CallbackDeadline Discord takes no first response for
// it, past TokenLife its token works no more.
func (s *Server) Age(d time.Duration) {
	s.mu.Lock()
	for _, in := range s.interactions {
		in.Created = in.Created.Add(-d)
	}
	s.notify()
	s.mu.Unlock()
}

// ExpireTokens makes every interaction token issued so far expired.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	for _, in := range s.interactions {
		in.Created = time.Now().Add(-s.opts.TokenLife - time.Second)
	}
	s.notify()
	s.mu.Unlock()
}

// Snapshot accessors, each copying under the lock.

// Calls returns the recorded requests matching route (as Fail takes it;
// "" for all), oldest first.
func (s *Server) Calls(route string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return View{s}.Calls(route)
}

// RateLimited is how many requests answered 429 (scripted or budget).
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateLimited
}

// Messages returns copies of the bot's live messages in channel, oldest
// first (users' messages are not among them; see View.Posted).
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return View{s}.Messages(channel)
}

// Message returns a copy of message id.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return View{s}.Message(id)
}

// Interaction returns a copy of interaction id.
func (s *Server) Interaction(id string) (Interaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.interactions[id]
	if !ok {
		return Interaction{}, false
	}
	return *in, true
}

// Commands returns the commands registered globally (scope "") or for a
// guild (scope = guild id), as the last PUT sent them.
func (s *Server) Commands(scope string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands[scope]
}

// View reads the server's state inside Wait.
type View struct{ s *Server }

// Messages returns copies of the bot's live messages in channel, oldest
// first; a thread's opening system message is not among them.
func (v View) Messages(channel string) []Message {
	var out []Message
	for _, id := range v.s.order {
		if m := v.s.messages[id]; m.ChannelID == channel && !m.Deleted && m.AuthorID == v.s.opts.BotUserID && m.Type != threadStarter {
			c := *m
			c.History = append([]string(nil), m.History...)
			c.Reactions = append([]string(nil), m.Reactions...)
			out = append(out, c)
		}
	}
	return out
}

// All returns copies of every message of the bot not deleted, in posting
// order.
func (v View) All() []Message {
	var out []Message
	for _, id := range v.s.order {
		if m := v.s.messages[id]; !m.Deleted && m.AuthorID == v.s.opts.BotUserID && m.Type != threadStarter {
			c := *m
			c.History = append([]string(nil), m.History...)
			c.Reactions = append([]string(nil), m.Reactions...)
			out = append(out, c)
		}
	}
	return out
}

// Posted returns copies of every live message in channel, the users' and
// the bot's, oldest first.
func (v View) Posted(channel string) []Message {
	var out []Message
	for _, id := range v.s.order {
		if m := v.s.messages[id]; m.ChannelID == channel && !m.Deleted {
			c := *m
			c.History = append([]string(nil), m.History...)
			c.Reactions = append([]string(nil), m.Reactions...)
			out = append(out, c)
		}
	}
	return out
}

// Holding is how many requests a Failure.Until holds now.
func (v View) Holding() int { return v.s.holding }

// Message returns a copy of message id (the bot's or a user's).
func (v View) Message(id string) (Message, bool) {
	m, ok := v.s.messages[id]
	if !ok {
		return Message{}, false
	}
	c := *m
	c.History = append([]string(nil), m.History...)
	c.Reactions = append([]string(nil), m.Reactions...)
	return c, true
}

// Interaction returns a copy of interaction id.
func (v View) Interaction(id string) (Interaction, bool) {
	in, ok := v.s.interactions[id]
	if !ok {
		return Interaction{}, false
	}
	return *in, true
}

// Calls returns the recorded requests matching route, like Server.Calls.
func (v View) Calls(route string) []Call {
	match := routeMatch(route)
	var out []Call
	for _, c := range v.s.calls {
		if match(c.Method, c.Path) {
			out = append(out, c)
		}
	}
	return out
}

// Identifies and Resumes count gateway handshakes of each kind.
func (v View) Identifies() int { return v.s.gw.identifies }

// Resumes counts accepted RESUMEs.
func (v View) Resumes() int { return v.s.gw.resumes }

// Readies is when each connection got its READY or RESUMED, oldest first.
func (v View) Readies() []time.Time { return append([]time.Time(nil), v.s.gw.readies...) }

// Connected reports whether a client completed a handshake and is
// connected now.
func (v View) Connected() bool { return v.s.gw.conn != nil && v.s.gw.ready }

// Sockets counts the gateway websockets open now, handshake done or not.
func (v View) Sockets() int { return len(v.s.gw.all) }

// Heartbeats counts the heartbeats answered.
func (v View) Heartbeats() int { return v.s.gw.heartbeats }

// Intents is the intents value of the last IDENTIFY.
func (v View) Intents() int { return v.s.gw.intents }

// --- HTTP plumbing ---

type apiError struct {
	Status  int
	Code    int
	Message string
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e apiError) {
	writeJSON(w, e.Status, map[string]any{"code": e.Code, "message": e.Message})
}

// record parses r's JSON body and appends the call. Call with s.mu held.
func (s *Server) record(r *http.Request, status int) map[string]any {
	var body map[string]any
	var files []File
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		body, files = readMultipart(r)
	} else if r.Body != nil {
		_ = json.NewDecoder(r.Body).Decode(&body)
	}
	c := Call{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/api/v9"), Query: r.URL.Query(), Body: body, Status: status, At: time.Now(), Files: files}
	if am, ok := body["allowed_mentions"].(map[string]any); ok {
		c.AllowedMentions = am
	} else if d, ok := body["data"].(map[string]any); ok {
		if am, ok := d["allowed_mentions"].(map[string]any); ok {
			c.AllowedMentions = am
		}
	}
	s.calls = append(s.calls, c)
	s.notify()
	return body
}

// setStatus fixes the status of the last recorded call. Call with s.mu held.
func (s *Server) setStatus(status int) {
	if n := len(s.calls); n > 0 {
		s.calls[n-1].Status = status
	}
}

// scripted answers a scripted 429 if one matches. Call with s.mu held.
func (s *Server) scripted(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	for _, sc := range s.scripts {
		if !sc.late && sc.left > 0 && sc.match(r.Method, path) {
			sc.left--
			if sc.status != 0 {
				s.fail(w, apiError{sc.status, 0, http.StatusText(sc.status)})
				return true
			}
			s.tooMany(w, "scripted", sc.retryAfter, sc.global)
			return true
		}
	}
	return false
}

// tooMany writes a 429 the way Discord does. Call with s.mu held.
func (s *Server) tooMany(w http.ResponseWriter, bucket string, after time.Duration, global bool) {
	s.rateLimited++
	secs := after.Seconds()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(secs+0.999)))
	h.Set("X-RateLimit-Limit", strconv.Itoa(max(s.opts.ChannelLimit, 1)))
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(time.Now().Add(after).UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", bucket)
	h.Set("X-RateLimit-Scope", "user")
	if global {
		h.Set("X-RateLimit-Global", "true")
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"message": "You are being rate limited.", "retry_after": secs, "global": global,
	})
	s.setStatus(http.StatusTooManyRequests)
}

// budget applies the per-channel limit for one request touching channel:
// it answers 429 and returns false when the channel is over its budget,
// and otherwise counts the request and sets X-RateLimit-* headers. Call
// with s.mu held.
func (s *Server) budget(w http.ResponseWriter, channel string) bool {
	if s.opts.ChannelLimit <= 0 {
		return true
	}
	now := time.Now()
	win := s.opts.ChannelWindow
	recent := s.window[channel][:0]
	for _, t := range s.window[channel] {
		if now.Sub(t) < win {
			recent = append(recent, t)
		}
	}
	s.window[channel] = recent
	if len(recent) >= s.opts.ChannelLimit {
		s.tooMany(w, "channel:"+channel, recent[0].Add(win).Sub(now), false)
		return false
	}
	s.window[channel] = append(recent, now)
	if s.opts.NoRateLimitHeaders {
		return true
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.ChannelLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(s.opts.ChannelLimit-len(s.window[channel])))
	reset := s.window[channel][0].Add(win).Sub(now)
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(reset.Seconds(), 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", "channel:"+channel)
	return true
}

func (s *Server) botAuth(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bot "+s.opts.BotToken {
		s.setStatus(http.StatusUnauthorized)
		writeError(w, apiError{http.StatusUnauthorized, 0, "401: Unauthorized"})
		return false
	}
	return true
}

// messageJSON is the wire form of m, as REST answers it: a reply (and a
// thread's opening message) carries the message it refers to as
// referenced_message (one level deep; null once that message is deleted).
// Call with s.mu held.
func (s *Server) messageJSON(m *Message) map[string]any {
	out := s.wireMessage(m)
	if m.ReplyTo != "" {
		if ref := s.messages[m.ReplyTo]; ref != nil && !ref.Deleted {
			out["referenced_message"] = s.wireMessage(ref)
		} else {
			out["referenced_message"] = nil
		}
	}
	return out
}

// wireMessage is m without its referenced message. Call with s.mu held.
func (s *Server) wireMessage(m *Message) map[string]any {
	out := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "flags": m.Flags,
		"timestamp": m.At.UTC().Format(time.RFC3339Nano), "type": m.Type,
		"author":   s.userJSON(m.AuthorID),
		"mentions": []any{}, "mention_roles": []string{}, "attachments": []any{}, "embeds": []any{},
		"mention_everyone": strings.Contains(m.Content, "@everyone") || strings.Contains(m.Content, "@here"),
	}
	if m.GuildID != "" {
		out["guild_id"] = m.GuildID
	}
	switch {
	case m.Type == threadStarter:
		out["message_reference"] = map[string]any{"message_id": m.ReplyTo, "channel_id": s.threads[m.ChannelID], "guild_id": m.GuildID}
	case m.ReplyTo != "":
		out["type"] = 19
		out["message_reference"] = map[string]any{"message_id": m.ReplyTo, "channel_id": m.ChannelID}
	}
	mentions := []any{}
	for _, u := range m.Mentions {
		mentions = append(mentions, s.userJSON(u))
	}
	out["mentions"] = mentions
	if m.MentionRoles != nil {
		out["mention_roles"] = m.MentionRoles
	}
	atts := []any{}
	for i, a := range m.Attachments {
		key := m.ID + "/" + strconv.Itoa(i)
		atts = append(atts, map[string]any{
			"id": m.ID + strconv.Itoa(i), "filename": a.Name, "size": len(a.Data),
			"url": s.hs.URL + "/attachments/" + key + "/" + url.PathEscape(a.Name),
		})
	}
	out["attachments"] = atts
	return out
}

// userJSON is the user object of id: the bot, or a user as Post last saw
// them ("user<id>" for one never seen). Call with s.mu held.
func (s *Server) userJSON(id string) map[string]any {
	if id == s.opts.BotUserID {
		return map[string]any{"id": id, "username": s.opts.BotName, "global_name": nil, "bot": true}
	}
	u, ok := s.users[id]
	if !ok {
		u.name = "user" + id
	}
	out := map[string]any{"id": id, "username": u.name, "global_name": nil, "bot": u.bot}
	if u.global != "" {
		out["global_name"] = u.global
	}
	return out
}

// contentOK checks the 2,000-character limit (in code points).
func contentOK(w http.ResponseWriter, content string) bool {
	if utf8.RuneCountInString(content) > 2000 {
		writeError(w, apiError{http.StatusBadRequest, 50035, fmt.Sprintf("Invalid Form Body: content: Must be 2000 or fewer in length (got %d).", utf8.RuneCountInString(content))})
		return false
	}
	return true
}
