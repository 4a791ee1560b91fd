package discordtest

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// gateway is the fake's gateway state, guarded by Server.mu.
type gateway struct {
	conn       *websocket.Conn // the connection events go to; nil when none
	ready      bool
	all        map[*websocket.Conn]bool
	sessionID  string
	seq        int64
	log        []frame // this session's dispatches, for RESUME replay
	identifies int
	resumes    int
	intents    int
	sessions   int
}

type frame struct {
	Op   int             `json:"op"`
	D    json.RawMessage `json:"d"`
	S    *int64          `json:"s,omitempty"`
	T    string          `json:"t,omitempty"`
	seq  int64
	data any
}

func (g *gateway) init() { g.all = map[*websocket.Conn]bool{} }

func (g *gateway) snapshot() map[*websocket.Conn]bool {
	out := map[*websocket.Conn]bool{}
	for c := range g.all {
		out[c] = true
	}
	return out
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// send writes one frame. Call with s.mu held; the write has a deadline so a
// stuck client cannot hold the lock for long.
func send(c *websocket.Conn, op int, t string, seq int64, d any) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	f := frame{Op: op, D: raw, T: t}
	if op == 0 {
		f.S = &seq
	}
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.WriteJSON(f)
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.gw.all[c] = true
	err = send(c, 10, "", 0, map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.gw.all, c)
		if s.gw.conn == c {
			s.gw.conn, s.gw.ready = nil, false
		}
		s.notify()
		s.mu.Unlock()
		_ = c.Close()
	}()
	if err != nil {
		return
	}
	for {
		var in struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := c.ReadJSON(&in); err != nil {
			return
		}
		s.mu.Lock()
		switch in.Op {
		case 1:
			err = send(c, 11, "", 0, nil)
		case 2:
			err = s.identify(c, in.D)
		case 6:
			err = s.resume(c, in.D)
		}
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// identify starts a new session on c. Call with s.mu held.
func (s *Server) identify(c *websocket.Conn, d json.RawMessage) error {
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	if id.Token != "Bot "+s.opts.BotToken && id.Token != s.opts.BotToken {
		_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."))
		return net.ErrClosed
	}
	g := &s.gw
	g.identifies++
	g.sessions++
	g.intents = id.Intents
	g.sessionID = "session-" + strconv.Itoa(g.sessions)
	g.seq = 0
	g.log = nil
	g.conn, g.ready = c, true
	s.notify()
	return s.dispatchLocked("READY", map[string]any{
		"v":           9,
		"session_id":  g.sessionID,
		"user":        map[string]any{"id": s.opts.BotUserID, "username": s.opts.BotName, "bot": true},
		"application": map[string]any{"id": s.opts.AppID},
		"guilds":      []any{},
	})
}

// resume continues the session on c, replaying what the client missed, or
// answers op 9 when the session is unknown. Call with s.mu held.
func (s *Server) resume(c *websocket.Conn, d json.RawMessage) error {
	var rs struct {
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	g := &s.gw
	if rs.SessionID == "" || rs.SessionID != g.sessionID {
		return send(c, 9, "", 0, false)
	}
	g.resumes++
	g.conn, g.ready = c, true
	for _, f := range g.log {
		if f.seq > rs.Seq {
			if err := send(c, 0, f.T, f.seq, f.data); err != nil {
				return err
			}
		}
	}
	s.notify()
	return s.dispatchLocked("RESUMED", map[string]any{})
}

// dispatchLocked numbers an event, keeps it for replay and sends it to the
// live connection if there is one. Call with s.mu held.
func (s *Server) dispatchLocked(t string, d any) error {
	g := &s.gw
	g.seq++
	g.log = append(g.log, frame{T: t, seq: g.seq, data: d})
	if g.conn == nil || !g.ready {
		return nil
	}
	return send(g.conn, 0, t, g.seq, d)
}

// Dispatch sends a gateway event (op 0) with the next sequence number. When
// no client is connected the event waits in the session log and a RESUME
// replays it.
func (s *Server) Dispatch(t string, d any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.dispatchLocked(t, d)
}

// Reconnect asks the connected client to reconnect (op 7); it is expected
// to RESUME.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gw.conn != nil {
		_ = send(s.gw.conn, 7, "", 0, nil)
		s.gw.ready = false
	}
}

// InvalidSession sends op 9 (not resumable) to the connected client; it is
// expected to IDENTIFY again.
func (s *Server) InvalidSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gw.conn != nil {
		_ = send(s.gw.conn, 9, "", 0, false)
		s.gw.ready = false
		s.gw.sessionID = ""
	}
}

// Drop closes the client's socket without a close frame, as a network
// failure would; the client is expected to reconnect and RESUME.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.gw.conn; c != nil {
		s.gw.conn, s.gw.ready = nil, false
		_ = c.UnderlyingConn().Close()
		s.notify()
	}
}
