// Package slacktest is a fake Slack for tests: the Web API methods a bot
// uses over HTTP, and Socket Mode over a websocket, on 127.0.0.1. It keeps
// the channels' messages (read back with conversations.history and
// conversations.replies, paged by cursor as Slack pages them) and the
// workspace's users (users.info), records every call with its parsed
// arguments and can be scripted to fail (429 with Retry-After, 5xx,
// ok:false), to hold a call until released, to drop or refresh the socket,
// and to deliver an event twice. Like Slack, it answers missing_scope to a
// call that needs a scope the token lacks (SetScopes) and not_in_channel
// where the bot is not a member (Leave). It enforces a
// configurable chat.update budget per minute the way Slack enforces Tier 3:
// a call over the budget gets HTTP 429 with Retry-After. It streams
// messages as Slack does (chat.startStream, chat.appendStream,
// chat.stopStream; see stream.go), with their tiers' limits.
//
// Point slack-go at it with slack.OptionAPIURL(s.APIURL()) and
// slack.OptionAppLevelToken(AppToken), using BotToken as the bot token.
package slacktest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// The fake's workspace, bot and tokens.
const (
	BotToken  = "xoxb-fake-bot-token"
	AppToken  = "xapp-fake-app-token"
	TeamID    = "T0FAKE"
	BotUserID = "U0GOLEM"
	BotID     = "B0GOLEM"
	AppID     = "A0GOLEM"
)

// Options configure a Server.
type Options struct {
	// UpdatesPerMinute is the chat.update budget of the workspace: a call
	// that would be the (n+1)th successful chat.update within the last 60
	// seconds is refused with 429 and a Retry-After telling when a slot
	// frees. Zero means unlimited.
	UpdatesPerMinute int
	// StreamIdle is how long a streamed message may go without an append
	// before its stream ends (message_not_in_streaming_state afterwards);
	// default DefaultStreamIdle.
	StreamIdle time.Duration
	// StatusTimeout is how long a thread's status (assistant.threads.setStatus)
	// shows when no message is posted in the thread; default
	// DefaultStatusTimeout, Slack's two minutes.
	StatusTimeout time.Duration
	// PingInterval is how often the socket pings the client; default 2s.
	// slack-go reconnects when it hears no ping for 30 s.
	PingInterval time.Duration
	// AckTimeout is how long an events_api envelope may go unacknowledged
	// before the fake sends its event again, as Slack does: in a new
	// envelope with retry_attempt one higher and retry_reason "timeout",
	// on another open connection when there is one, at most MaxRetries
	// times. Default DefaultAckTimeout; negative never redelivers.
	AckTimeout time.Duration
	// MaxConnections is how many Socket Mode connections may be open at
	// once; default DefaultMaxConnections, Slack's limit per app. One more
	// is told {"type":"disconnect","reason":"too_many_websockets"} and
	// closed.
	MaxConnections int
}

// Slack's delivery rules, which the fake keeps by default.
const (
	DefaultAckTimeout     = 3 * time.Second
	MaxRetries            = 3
	DefaultMaxConnections = 10
)

// Call is one Web API call as the fake received it.
type Call struct {
	Method string            // "chat.postMessage"
	Args   map[string]string // form, query and top-level JSON fields; no token
	Status int               // HTTP status answered
	Error  string            // the ok:false error, if any
	At     time.Time
}

// Failure scripts the answer to one future call of a method.
type Failure struct {
	Status     int    // 429, 500, 503, ...; 200 with Error for ok:false
	RetryAfter int    // seconds, sent with a 429
	Error      string // ok:false error code, with Status 200 (or 0)
	// Hang holds the call unanswered until the client gives up (a stalled
	// connection); Status and Error are then unused.
	Hang bool
	// Until holds the call until it is closed (or the client gives up),
	// then answers it as if nothing were scripted: a slow platform. The
	// other fields are unused. A call the client gives up on meanwhile is
	// recorded unanswered. Holding tells how many calls are held.
	Until <-chan struct{}
	// Landed runs the call before answering with the fault, as Slack may
	// when it fails late: a chat.postMessage answered 500 or left hanging
	// has posted its message all the same.
	Landed bool
}

// Message is a message in a channel of the fake.
type Message struct {
	Channel   string
	TS        string
	ThreadTS  string // empty for a top-level message
	User      string
	BotID     string // set on the bot's own messages
	Text      string
	Edits     int              // successful chat.update calls on it
	Reactions []string         // reaction names the bot added and not removed
	Blocks    string           // the Block Kit blocks as posted or last updated (JSON); "" without
	Files     []map[string]any // the files it carries, entries from AddFile
	// Metadata is the message metadata as posted (JSON); history reads
	// show it only with include_all_metadata, as Slack does.
	Metadata string
	// Streaming is true from chat.startStream until chat.stopStream or
	// the stream's expiry (Options.StreamIdle); chat.update refuses such a
	// message (streaming_state_conflict). Appends counts the successful
	// chat.appendStream and chat.stopStream calls on it; Recipient is the
	// recipient_user_id it was started with.
	Streaming bool
	Appends   int
	Recipient string
	// TaskDisplay is the task_display_mode it was started with; Tasks the
	// task cards its task_update chunks made, in order of first update.
	TaskDisplay string
	Tasks       []Task
	SubType     string    // "assistant_app_thread" for a split-view thread's root
	streamAt    time.Time // the stream's start or latest append
}

// Server is a running fake Slack. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:port", without "/api/".
	URL string

	opts Options
	http *httptest.Server

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	seq     int
	lastTS  int64 // the latest message timestamp, in microseconds
	calls   []Call
	faults  map[string][]Failure
	msgs    []*Message
	files   map[string]*file
	pending map[string]*file // files.getUploadURLExternal'd, not yet completed
	uploads []Upload         // files the bot shared with files.completeUploadExternal
	updates []time.Time      // successful chat.update times, within a minute
	// streamCalls are the successful streaming calls per method, within a minute.
	streamCalls map[string][]time.Time
	tickets     map[string]bool
	conns       []*wsConn
	connects    int
	refused     int // connections refused past MaxConnections
	turn        int // the connection the next envelope goes to, round robin
	acks        map[string]Ack
	// envEvent is the event id of each events_api envelope pushed;
	// eventAcked the events one of whose envelopes was acked.
	envEvent   map[string]string
	eventAcked map[string]bool
	pushes     []Push
	users      map[string]User
	channels   map[string]string // channel id -> name, for conversations.info
	scopes     []string          // the bot token's
	left       map[string]bool   // channels the bot is not in
	mpims      map[string]bool   // channels that are group DMs (GroupDM)
	holding    map[string]int    // calls held by Failure.Until, per method
	closed     bool
	// assistant are the split view's threads by channel/ts; statuses the
	// threads' status lines by channel/ts.
	assistant map[string]*AssistantThread
	statuses  map[string]status
}

// New starts a fake Slack on 127.0.0.1. Call Close when done.
func New(opts Options) *Server {
	if opts.PingInterval <= 0 {
		opts.PingInterval = 2 * time.Second
	}
	if opts.AckTimeout == 0 {
		opts.AckTimeout = DefaultAckTimeout
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	s := &Server{
		opts:    opts,
		changed: make(chan struct{}),
		faults:  map[string][]Failure{},
		files:   map[string]*file{},
		pending: map[string]*file{},
		tickets: map[string]bool{},
		acks:    map[string]Ack{},

		envEvent:   map[string]string{},
		eventAcked: map[string]bool{},
		channels:   map[string]string{},
		users:      map[string]User{BotUserID: {ID: BotUserID, Name: "golem", RealName: "golem", IsBot: true}},
		scopes:     slices.Clone(DefaultScopes),
		left:       map[string]bool{},
		mpims:      map[string]bool{},
		holding:    map[string]int{},

		streamCalls: map[string][]time.Time{},
		assistant:   map[string]*AssistantThread{},
		statuses:    map[string]status{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", s.serveAPI)
	mux.HandleFunc("/link/", s.serveSocket)
	mux.HandleFunc("/files-pri/{id}/{name}", s.serveFile)
	mux.HandleFunc("POST /upload/{id}", s.serveUpload)
	s.http = httptest.NewServer(mux)
	s.URL = s.http.URL
	return s
}

// APIURL is the Web API base URL for slack.OptionAPIURL, ending in "/".
func (s *Server) APIURL() string { return s.URL + "/api/" }

// Close drops every socket and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := slices.Clone(s.conns)
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.http.CloseClientConnections()
	s.http.Close()
}

// SetUpdatesPerMinute changes the chat.update budget (0 = unlimited).
func (s *Server) SetUpdatesPerMinute(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.UpdatesPerMinute = n
}

// Fail makes the next n calls of method (e.g. "chat.update") answer with
// f, after the failures scripted before it.
func (s *Server) Fail(method string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], f)
	}
}

// Calls returns the recorded calls of method, or of every method when
// method is empty, in arrival order.
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

// Holding returns how many calls of method are held by Failure.Until now.
func (s *Server) Holding(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holding[method]
}

// RateLimited is how many calls, of any method, were answered 429.
func (s *Server) RateLimited() int { return s.Count("", http.StatusTooManyRequests) }

// Count returns how many calls of method ("" for any) got status (0: any
// status).
func (s *Server) Count(method string, status int) int {
	n := 0
	for _, c := range s.Calls(method) {
		if status == 0 || c.Status == status {
			n++
		}
	}
	return n
}

// Messages returns copies of the messages of channel (all channels when
// empty), in posting order.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs {
		if channel == "" || m.Channel == channel {
			c := *m
			c.Reactions = slices.Clone(m.Reactions)
			c.Tasks = slices.Clone(m.Tasks)
			out = append(out, c)
		}
	}
	return out
}

// BotMessages returns the bot's messages in channel, in posting order.
func (s *Server) BotMessages(channel string) []Message {
	var out []Message
	for _, m := range s.Messages(channel) {
		if m.BotID == BotID {
			out = append(out, m)
		}
	}
	return out
}

// Message returns the message channel/ts.
func (s *Server) Message(channel, ts string) (Message, bool) {
	for _, m := range s.Messages(channel) {
		if m.TS == ts {
			return m, true
		}
	}
	return Message{}, false
}

// Wait waits until cond holds or timeout passes, re-checking it after
// every change the fake sees (a call, an ack, a connection), and reports
// whether it held. cond may call the Server's methods.
func (s *Server) Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
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

// notifyLocked wakes Wait; s.mu is held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// nextTSLocked returns a fresh message timestamp: the server's clock in
// microseconds, as Slack's, and increasing.
func (s *Server) nextTSLocked() string {
	now := time.Now().UnixMicro()
	if now <= s.lastTS {
		now = s.lastTS + 1
	}
	s.lastTS = now
	return fmt.Sprintf("%d.%06d", now/1e6, now%1e6)
}

// nextIDLocked returns a fresh id with prefix.
func (s *Server) nextIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%06d", prefix, s.seq)
}

func (s *Server) findLocked(channel, ts string) *Message {
	for _, m := range s.msgs {
		if m.Channel == channel && m.TS == ts {
			return m
		}
	}
	return nil
}
