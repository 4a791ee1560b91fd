package discordtest

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// The gateway is as strict as Discord's, and in one point stricter:
//
//   - the first frame is HELLO; the client must IDENTIFY (op 2) or RESUME
//     (op 6) before anything but heartbeats (close 4003), and only once a
//     connection (close 4005); an unknown opcode closes with 4001;
//   - every heartbeat (op 1) is answered with op 11, except on a
//     connection made a zombie (Zombie), which answers nothing and gets no
//     events, as a link dead one way would;
//   - READY carries session_id and resume_gateway_url; a RESUME is
//     accepted only there (stricter than Discord, which disconnects
//     clients that resume elsewhere more often), with the session's id and
//     a sequence number it has sent (else op 9 d=false, or close 4007 for a
//     number from the future), and replays every dispatch after that number
//     before RESUMED;
//   - after op 9 with d=false (InvalidSession) the session is gone: only a
//     fresh IDENTIFY gets a new one, whose numbers start again at 1.

// gateway is the fake's gateway state, guarded by Server.mu.
type gateway struct {
	conn       *websocket.Conn // the connection events go to; nil when none
	ready      bool
	all        map[*websocket.Conn]*client
	sessionID  string
	seq        int64
	log        []frame // this session's dispatches, for RESUME replay
	identifies int
	resumes    int
	intents    int
	sessions   int
	heartbeats int
	readies    []time.Time // when each connection got its READY or RESUMED
	flaps      int         // connections left to drop right after READY or RESUMED (Flap)
}

// client is one gateway connection's state.
type client struct {
	resumeURL bool // dialled at the session's resume_gateway_url
	authed    bool // identified or resumed
	zombie    bool // answers nothing and gets nothing (Zombie)
}

type frame struct {
	Op   int             `json:"op"`
	D    json.RawMessage `json:"d"`
	S    *int64          `json:"s,omitempty"`
	T    string          `json:"t,omitempty"`
	seq  int64
	data any
}

func (g *gateway) init() { g.all = map[*websocket.Conn]*client{} }

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

// closeWith sends a close frame with code and ends the connection. Call
// with s.mu held.
func closeWith(c *websocket.Conn, code int, text string) error {
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	return net.ErrClosed
}

func (s *Server) serveResumeGateway(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, true)
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, false)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, resumeURL bool) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	cl := &client{resumeURL: resumeURL}
	s.mu.Lock()
	s.gw.all[c] = cl
	s.notify()
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
		switch {
		case cl.zombie:
		case in.Op == 1:
			s.gw.heartbeats++
			err = send(c, 11, "", 0, nil)
		case in.Op == 2 || in.Op == 6:
			if cl.authed {
				err = closeWith(c, 4005, "Already authenticated.")
				break
			}
			if in.Op == 2 {
				err = s.identify(c, cl, in.D)
			} else {
				err = s.resume(c, cl, in.D)
			}
		case in.Op == 3 || in.Op == 4 || in.Op == 8:
			if !cl.authed {
				err = closeWith(c, 4003, "Not authenticated.")
			}
		default:
			err = closeWith(c, 4001, "Unknown opcode.")
		}
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// identify starts a new session on c. Call with s.mu held.
func (s *Server) identify(c *websocket.Conn, cl *client, d json.RawMessage) error {
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	if id.Token != "Bot "+s.opts.BotToken && id.Token != s.opts.BotToken {
		return closeWith(c, 4004, "Authentication failed.")
	}
	g := &s.gw
	g.identifies++
	g.sessions++
	g.intents = id.Intents
	g.sessionID = "session-" + strconv.Itoa(g.sessions)
	g.seq = 0
	g.log = nil
	g.conn, g.ready, cl.authed = c, true, true
	s.notify()
	err := s.dispatchLocked("READY", map[string]any{
		"v":                  9,
		"session_id":         g.sessionID,
		"resume_gateway_url": "ws" + strings.TrimPrefix(s.hs.URL, "http") + "/resume-gateway",
		"user":               map[string]any{"id": s.opts.BotUserID, "username": s.opts.BotName, "bot": true},
		"application":        map[string]any{"id": s.opts.AppID},
		"guilds":             []any{},
	})
	return s.readyLocked(c, err)
}

// readyLocked records that c got its READY or RESUMED (whose sending
// ended with err) and drops it at once if Flap asks. Call with s.mu held.
func (s *Server) readyLocked(c *websocket.Conn, err error) error {
	g := &s.gw
	g.readies = append(g.readies, time.Now())
	if err != nil || g.flaps == 0 {
		return err
	}
	g.flaps--
	g.conn, g.ready = nil, false
	s.notify()
	return closeWith(c, 4000, "Unknown error.") // resumable, as a flapping gateway leaves it
}

// resume continues the session on c, replaying what the client missed, or
// answers op 9 when the session cannot be resumed there. Call with s.mu
// held.
func (s *Server) resume(c *websocket.Conn, cl *client, d json.RawMessage) error {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	if rs.Token != "Bot "+s.opts.BotToken && rs.Token != s.opts.BotToken {
		return closeWith(c, 4004, "Authentication failed.")
	}
	g := &s.gw
	if rs.SessionID == "" || rs.SessionID != g.sessionID || !cl.resumeURL {
		return send(c, 9, "", 0, false)
	}
	if rs.Seq > g.seq {
		return closeWith(c, 4007, "Invalid seq.")
	}
	g.resumes++
	g.conn, g.ready, cl.authed = c, true, true
	for _, f := range g.log {
		if f.seq > rs.Seq {
			if err := send(c, 0, f.T, f.seq, f.data); err != nil {
				return err
			}
		}
	}
	s.notify()
	return s.readyLocked(c, s.dispatchLocked("RESUMED", map[string]any{}))
}

// dispatchLocked numbers an event, keeps it for replay and sends it to the
// live connection if there is one. Call with s.mu held.
func (s *Server) dispatchLocked(t string, d any) error {
	g := &s.gw
	g.seq++
	g.log = append(g.log, frame{T: t, seq: g.seq, data: d})
	if g.conn == nil || !g.ready || g.all[g.conn] == nil || g.all[g.conn].zombie {
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

// InvalidSession sends op 9 with d=false to the connected client and ends
// its session: it is expected to IDENTIFY again, and nothing of the old
// session is replayed.
func (s *Server) InvalidSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gw.conn != nil {
		_ = send(s.gw.conn, 9, "", 0, false)
		s.gw.ready = false
		s.gw.sessionID = ""
	}
}

// InvalidResumable sends op 9 with d=true: the session stays, and the
// client is expected to RESUME it.
func (s *Server) InvalidResumable() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gw.conn != nil {
		_ = send(s.gw.conn, 9, "", 0, true)
		s.gw.ready = false
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

// Flap drops each of the next n connections right after its READY or
// RESUMED (a close 4000, which leaves the session resumable), as a
// flapping link or an overloaded gateway does.
func (s *Server) Flap(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.flaps = n
}

// Zombie makes the client's connection dead one way while its socket
// stays open: its heartbeats go unanswered and events wait in the session
// log. The client is expected to notice the missing ACKs, drop the
// connection and RESUME.
func (s *Server) Zombie() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.gw.conn; c != nil {
		s.gw.all[c].zombie = true
		s.gw.conn, s.gw.ready = nil, false
		s.notify()
	}
}

// CloseWith closes the client's connection with a close frame of code, as
// Discord does: 4000 (unknown error) leaves the session resumable, 4009
// (session timed out) and 4007 (invalid seq) end it, 4004 (authentication
// failed) and 4010 to 4014 refuse the bot for good. Discord ends the
// session with the codes that end it.
func (s *Server) CloseWith(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.gw.conn; c != nil {
		if code == 4007 || code == 4009 {
			s.gw.sessionID = ""
		}
		_ = closeWith(c, code, "")
		s.gw.conn, s.gw.ready = nil, false
		_ = c.UnderlyingConn().Close()
		s.notify()
	}
}
