package slacktest

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ErrNoSocket is returned when an event is pushed while no client is
// connected.
var ErrNoSocket = errors.New("slacktest: no socket mode connection")

// Event is an Events API event a user causes.
type Event struct {
	Type        string // "app_mention" (default) or "message"
	User        string
	Channel     string
	ChannelType string // "channel" (default), "im", "group"
	Text        string
	TS          string // assigned when empty
	ThreadTS    string
	SubType     string // "message_changed", "bot_message", ...
	BotID       string
	Files       []map[string]any // from AddFile
	Extra       map[string]any   // merged into the event as is
}

// Delivery is one pushed envelope.
type Delivery struct {
	EnvelopeID   string
	EventID      string // empty for slash commands
	TS           string // the message's ts
	RetryAttempt int
	kind         string
	payload      map[string]any
}

// Ack is a client's acknowledgement of an envelope.
type Ack struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
	At         time.Time       `json:"-"`
}

// Push is one envelope as the fake sent it: on which connection (numbered
// from 1 in the order they opened) and which attempt of its event.
type Push struct {
	EnvelopeID   string
	EventID      string // empty for slash commands and clicks
	Conn         int
	RetryAttempt int
}

type wsConn struct {
	id   int
	c    *websocket.Conn
	wmu  sync.Mutex
	once sync.Once
	done chan struct{}
}

func (c *wsConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.c.WriteJSON(v)
}

func (c *wsConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.c.Close()
	})
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveSocket accepts a Socket Mode connection for a ticket handed out by
// apps.connections.open, says hello, pings, and records acks.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	ok := s.tickets[ticket] && !s.closed
	delete(s.tickets, ticket)
	s.mu.Unlock()
	if !ok {
		http.Error(w, "bad ticket", http.StatusUnauthorized)
		return
	}
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if len(s.conns) >= s.opts.MaxConnections {
		s.refused++
		s.notifyLocked()
		s.mu.Unlock()
		_ = c.WriteJSON(map[string]any{"type": "disconnect", "reason": "too_many_websockets",
			"debug_info": map[string]any{"host": "slacktest"}})
		_ = c.Close()
		return
	}
	s.connects++
	conn := &wsConn{id: s.connects, c: c, done: make(chan struct{})}
	s.conns = append(s.conns, conn)
	n := len(s.conns)
	s.mu.Unlock()
	defer func() {
		conn.close()
		s.mu.Lock()
		s.conns = slices.DeleteFunc(s.conns, func(x *wsConn) bool { return x == conn })
		s.notifyLocked()
		s.mu.Unlock()
	}()

	hello := map[string]any{"type": "hello", "num_connections": n,
		"debug_info": map[string]any{"host": "slacktest"}, "connection_info": map[string]any{"app_id": AppID}}
	if conn.write(hello) != nil {
		return
	}
	s.mu.Lock()
	s.notifyLocked()
	s.mu.Unlock()

	go func() {
		t := time.NewTicker(s.opts.PingInterval)
		defer t.Stop()
		for {
			if c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second)) != nil {
				return
			}
			select {
			case <-conn.done:
				return
			case <-t.C:
			}
		}
	}()

	for {
		var ack Ack
		if err := c.ReadJSON(&ack); err != nil {
			return
		}
		ack.At = time.Now()
		s.mu.Lock()
		if _, dup := s.acks[ack.EnvelopeID]; !dup {
			s.acks[ack.EnvelopeID] = ack
		}
		if ev, ok := s.envEvent[ack.EnvelopeID]; ok {
			s.eventAcked[ev] = true
		}
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// Connects returns how many Socket Mode connections were opened so far.
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// Refused returns how many connections were told too_many_websockets.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Pushes returns every envelope sent so far, in order.
func (s *Server) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pushes)
}

// Open returns how many Socket Mode connections are open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Acked returns the client's ack of envelopeID, if it came.
func (s *Server) Acked(envelopeID string) (Ack, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.acks[envelopeID]
	return a, ok
}

// RequestDisconnect sends Slack's "disconnect" request on every open
// socket, as Slack does before it recycles a connection, then closes them.
func (s *Server) RequestDisconnect() {
	for _, c := range s.openConns() {
		_ = c.write(map[string]any{"type": "disconnect", "reason": "refresh_requested",
			"debug_info": map[string]any{"host": "slacktest"}})
		c.close()
	}
}

// DropSockets closes every open socket abruptly, as a network failure would.
func (s *Server) DropSockets() {
	for _, c := range s.openConns() {
		c.close()
	}
}

func (s *Server) openConns() []*wsConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.conns)
}

// Deliver pushes ev as an events_api envelope with a fresh event_id on one
// of the open sockets, in turn, as Slack spreads an app's events over its
// connections; unacked, it comes again (Options.AckTimeout). A message without a subtype is also stored in its
// channel, so that the bot can react to it and read its thread.
func (s *Server) Deliver(ev Event) (Delivery, error) {
	if ev.Type == "" {
		ev.Type = "app_mention"
	}
	if ev.ChannelType == "" {
		ev.ChannelType = "channel"
	}
	s.mu.Lock()
	if ev.TS == "" {
		ev.TS = s.nextTSLocked()
	}
	if ev.SubType == "" && s.findLocked(ev.Channel, ev.TS) == nil {
		s.msgs = append(s.msgs, &Message{Channel: ev.Channel, TS: ev.TS, ThreadTS: ev.ThreadTS,
			User: ev.User, BotID: ev.BotID, Text: ev.Text, Files: ev.Files})
	}
	eventID := s.nextIDLocked("Ev")
	s.mu.Unlock()

	inner := map[string]any{"type": ev.Type, "user": ev.User, "channel": ev.Channel, "text": ev.Text,
		"ts": ev.TS, "event_ts": ev.TS}
	if ev.Type == "message" {
		inner["channel_type"] = ev.ChannelType
	}
	for k, v := range map[string]string{"thread_ts": ev.ThreadTS, "subtype": ev.SubType, "bot_id": ev.BotID} {
		if v != "" {
			inner[k] = v
		}
	}
	if len(ev.Files) > 0 {
		inner["files"] = ev.Files
		inner["upload"] = true
	}
	maps.Copy(inner, ev.Extra)
	payload := map[string]any{"token": "verification", "team_id": TeamID, "api_app_id": AppID,
		"type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(),
		"event": inner, "authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}}}
	return s.push(Delivery{EventID: eventID, TS: ev.TS, kind: "events_api", payload: payload})
}

// Redeliver pushes d's event again in a new envelope with retry_attempt
// one higher, as Slack does when an ack is late.
func (s *Server) Redeliver(d Delivery) (Delivery, error) {
	d.RetryAttempt++
	return s.push(d)
}

// SlashCommand pushes a slash_commands envelope, as when user types
// "command text" (e.g. "/golem", "stop") in channel.
func (s *Server) SlashCommand(user, channel, command, text string) (Delivery, error) {
	s.mu.Lock()
	trigger := s.nextIDLocked("Tr")
	s.mu.Unlock()
	payload := map[string]any{"token": "verification", "team_id": TeamID, "team_domain": "fake",
		"channel_id": channel, "channel_name": channel, "user_id": user, "user_name": user,
		"command": command, "text": text, "api_app_id": AppID, "trigger_id": trigger,
		"response_url": s.URL + "/commands/" + trigger}
	return s.push(Delivery{kind: "slash_commands", payload: payload})
}

// Click delivers a click by user on the button with value under the bot's
// message ts in channel (thread: the message's thread) as Socket Mode
// does: an interactive envelope whose payload is block_actions.
func (s *Server) Click(user, channel, thread, ts, value string) (Delivery, error) {
	s.mu.Lock()
	trigger := s.nextIDLocked("Tr")
	actionTS := s.nextTSLocked()
	s.mu.Unlock()
	container := map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false}
	if thread != "" {
		container["thread_ts"] = thread
	}
	payload := map[string]any{
		"type": "block_actions", "team": map[string]any{"id": TeamID, "domain": "fake"},
		"user":       map[string]any{"id": user, "username": user, "name": user, "team_id": TeamID},
		"api_app_id": AppID, "token": "verification", "container": container, "trigger_id": trigger,
		"channel":      map[string]any{"id": channel, "name": channel},
		"message":      map[string]any{"type": "message", "ts": ts, "thread_ts": thread, "user": BotUserID, "bot_id": BotID},
		"response_url": s.URL + "/actions/" + trigger,
		"actions": []map[string]any{{"type": "button", "block_id": "golem-question", "action_id": value,
			"value": value, "action_ts": actionTS, "text": map[string]any{"type": "plain_text", "text": value}}},
	}
	return s.push(Delivery{kind: "interactive", payload: payload})
}

func (s *Server) push(d Delivery) (Delivery, error) {
	return s.pushAvoiding(d, 0)
}

// pushAvoiding sends d in a new envelope on the next open connection in
// turn, other than the one numbered avoid when another is open. An events_api
// envelope not acked within Options.AckTimeout is sent again.
func (s *Server) pushAvoiding(d Delivery, avoid int) (Delivery, error) {
	s.mu.Lock()
	d.EnvelopeID = s.nextIDLocked("env-")
	c := s.nextConnLocked(avoid)
	if c != nil {
		s.pushes = append(s.pushes, Push{EnvelopeID: d.EnvelopeID, EventID: d.EventID, Conn: c.id, RetryAttempt: d.RetryAttempt})
		if d.kind == "events_api" {
			s.envEvent[d.EnvelopeID] = d.EventID
		}
	}
	s.mu.Unlock()
	if c == nil {
		return d, ErrNoSocket
	}
	env := map[string]any{"envelope_id": d.EnvelopeID, "type": d.kind, "payload": d.payload,
		"accepts_response_payload": d.kind != "events_api"}
	if d.kind == "events_api" {
		env["retry_attempt"] = d.RetryAttempt
		if d.RetryAttempt > 0 {
			env["retry_reason"] = "timeout"
		}
		if s.opts.AckTimeout > 0 && d.RetryAttempt < MaxRetries {
			time.AfterFunc(s.opts.AckTimeout, func() { s.retry(d, c.id) })
		}
	}
	if err := c.write(env); err != nil {
		return d, errors.Join(ErrNoSocket, err)
	}
	return d, nil
}

// nextConnLocked is the connection the next envelope goes to: the open
// ones in turn, skipping the one numbered avoid unless it is alone.
func (s *Server) nextConnLocked(avoid int) *wsConn {
	for range len(s.conns) {
		c := s.conns[s.turn%len(s.conns)]
		s.turn++
		if c.id != avoid || len(s.conns) == 1 {
			return c
		}
	}
	return nil
}

// retry sends d's event again unless one of its envelopes was acked.
func (s *Server) retry(d Delivery, conn int) {
	s.mu.Lock()
	done := s.eventAcked[d.EventID] || s.closed
	s.mu.Unlock()
	if done {
		return
	}
	d.RetryAttempt++
	if _, err := s.pushAvoiding(d, conn); err != nil && d.RetryAttempt < MaxRetries {
		// No connection took it: Slack tries again later all the same.
		time.AfterFunc(s.opts.AckTimeout, func() { s.retry(d, conn) })
	}
}
