package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/golem-chat/golem/internal/retry"
)

// The gateway connection is golem's own, not discordgo's Session.Open:
// discordgo v0.29.0 reconnects from its heartbeat goroutine and from its
// listener at once, and the heartbeat of a socket that died closes
// whatever socket the session holds by then, the new one included. Its
// Close holds the session's lock through a 1 s sleep, so the next
// socket's heartbeat, waiting for that lock, finds its own socket closed
// and closes the one after: once started, every new connection was closed
// a moment after its handshake, the READY of a fresh session was dropped
// unread (its listener quits once told to stop, after reading a frame),
// and the bot resumed a session Discord had invalidated, forever, deaf.
// Here one goroutine (Start's) dials, reads and dispatches, in order; a
// connection's heartbeat only ever closes its own socket and is stopped
// before the next connection is opened.

// gatewayVersion is the gateway API version asked for in the URL.
const gatewayVersion = "9"

// gatewaySession is what a RESUME needs, kept across connections: the
// session Discord started at READY, where to resume it, and the sequence
// number of the last event handed on. Only the gateway goroutine writes
// it; the heartbeat reads seq.
type gatewaySession struct {
	id        string
	resumeURL string
	url       string // GET /gateway's answer, asked once
	seq       atomic.Int64
	saved     time.Time // when it was last handed to the store (leader.go)
}

// forget drops the session (op 9 with d false, close 4007 or 4009): the
// next connection identifies afresh, and Discord replays nothing.
func (s *gatewaySession) forget() {
	s.id, s.resumeURL = "", ""
	s.seq.Store(0)
}

// ended forgets the session when the close that ended a connection says
// Discord will not resume it: 4007 (invalid seq), 4009 (session timed out).
func ended(s *gatewaySession, err error) {
	var ce *websocket.CloseError
	if errors.As(err, &ce) && (ce.Code == 4007 || ce.Code == 4009) {
		s.forget()
	}
}

// frame is one gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int64           `json:"s"`
	T  string          `json:"t"`
}

// Gateway opcodes golem sends or reads.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// closeResumable is the close code golem ends a connection with when it
// means to resume: Discord ends the session when a client closes with 1000
// or 1001.
const closeResumable = 4000

// errInvalidSession is a connection's end by op 9; errReconnect by op 7.
var (
	errInvalidSession = errors.New("discord: gateway invalidated the session (op 9)")
	errReconnect      = errors.New("discord: gateway asked to reconnect (op 7)")
	errHeartbeat      = errors.New("discord: gateway heartbeat not acknowledged")
)

// conn is one gateway websocket and its heartbeat. Writes are serialized
// by wmu; the reader is the gateway goroutine.
type conn struct {
	ws       *websocket.Conn
	wmu      sync.Mutex
	interval time.Duration
	acked    atomic.Bool // the last heartbeat was acknowledged (op 11)
	zombie   atomic.Bool // the heartbeat closed the socket for want of an ACK
	stop     chan struct{}
	beating  sync.WaitGroup
	ready    bool // READY or RESUMED came on this connection
}

func (c *conn) send(op int, d any) error {
	raw, err := json.Marshal(map[string]any{"op": op, "d": d})
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, raw)
}

// heartbeat sends op 1 with the last sequence number (null before any).
func (c *conn) heartbeat(seq int64) error {
	if seq == 0 {
		return c.send(opHeartbeat, nil)
	}
	return c.send(opHeartbeat, seq)
}

// beat sends a heartbeat every interval, the first after a random part of
// it as Discord asks. A heartbeat whose ACK has not come by the next one
// means a dead (zombie) connection: beat closes its socket, so the read
// fails and the gateway goroutine resumes on a new one.
func (c *conn) beat(seq *atomic.Int64) {
	defer c.beating.Done()
	t := time.NewTimer(rand.N(c.interval) + time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if !c.acked.Swap(false) {
			c.zombie.Store(true)
			_ = c.ws.NetConn().Close()
			return
		}
		if err := c.heartbeat(seq.Load()); err != nil {
			_ = c.ws.NetConn().Close()
			return
		}
		t.Reset(c.interval)
	}
}

// close stops the heartbeat and closes the socket with code.
func (c *conn) close(code int) {
	close(c.stop)
	c.beating.Wait()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
	_ = c.ws.Close()
}

// read returns the next frame; a frame that is not JSON is an error.
func (c *conn) read() (frame, error) {
	var f frame
	_, raw, err := c.ws.ReadMessage()
	if err != nil {
		if c.zombie.Load() {
			return f, fmt.Errorf("%w: %w", errHeartbeat, err)
		}
		return f, err
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("discord: gateway frame: %w", err)
	}
	return f, nil
}

// gatewayPolicy retries connecting for as long as golem runs: a Discord
// outage is waited out, backing off to 30 s between attempts; only an
// error no retry can fix (fatalGatewayError) ends it.
func gatewayPolicy(log *slog.Logger) retry.Policy {
	return retry.Policy{Platform: "discord", Log: log, Classify: gatewayVerdict, AttemptTimeout: 30 * time.Second,
		MaxAttempts: math.MaxInt, MaxFailures: math.MaxInt, MaxTotal: math.MaxInt64,
		FirstBackoff: time.Second, MaxBackoff: 30 * time.Second}
}

// gatewayVerdict reads a failed connection attempt: fatal ones are final,
// a 429 on GET /gateway is waited out, anything else is tried again.
func gatewayVerdict(err error) retry.Verdict {
	if fatalGatewayError(err) != nil {
		return retry.Refused
	}
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return retry.Failed("close_" + strconv.Itoa(ce.Code))
	case errors.Is(err, errInvalidSession):
		return retry.Failed("invalid_session")
	case errors.Is(err, errHeartbeat):
		return retry.Failed("heartbeat")
	}
	if v := verdict(err); v.Kind != retry.Final {
		return v
	}
	return retry.Failed("network")
}

// runGateway connects, dispatches events on this goroutine in the order
// they come, and reconnects until ctx ends (nil) or Discord refuses the
// bot for good (the error). A connection that drops or that Discord asks
// to leave (op 7, op 9 with d true) is resumed with op 6 on the session's
// resume_gateway_url, and Discord replays what was missed; a session
// Discord ended (op 9 with d false, close 4007 or 4009) is identified
// afresh after a wait of 1 to 5 s. A connection that ends within a
// heartbeat interval of its READY or RESUMED (dropped at once, as a
// flapping link or an overloaded gateway does) is followed by a wait that
// doubles from Adapter.flapWait up to 30 s each time it happens again, so
// a link that connects and drops over and over is not redialled in a
// tight loop; one connection that lasts starts the waits again from the
// first. connected is called once, after the first READY.
func (a *Adapter) runGateway(ctx context.Context, s *gatewaySession, connected func()) error {
	first := true
	flapping := retry.Backoff{First: a.flapWait, Max: 30 * time.Second, Log: a.log, Method: "gateway connection"}
	for {
		var c *conn
		err := a.gatewayRetry.Do(ctx, retry.Call{Method: "connect to gateway", Idempotent: true}, func(actx context.Context) error {
			var err error
			c, err = a.connect(actx, s)
			return err
		})
		if ctx.Err() != nil {
			if c != nil && err == nil {
				c.close(a.lastClose())
			}
			return nil
		}
		if err != nil {
			if fatal := fatalGatewayError(err); fatal != nil {
				return fatal
			}
			return err // not reached: the policy retries any other error
		}
		if first {
			first = false
			connected()
		}
		began := time.Now()
		err = a.serve(ctx, c, s)
		if ctx.Err() != nil {
			c.close(a.lastClose())
			return nil
		}
		c.close(closeResumable)
		ended(s, err)
		if fatal := fatalGatewayError(err); fatal != nil {
			return fatal
		}
		a.log.Info("gateway disconnected", "err", err, "resume", s.id != "")
		if time.Since(began) >= c.interval {
			flapping.Reset()
		} else if flapping.Wait(ctx, "gateway connection dropped right after it was made", "dropped_at_once", err) != nil {
			return nil
		}
		if s.id == "" && a.reidentify(ctx) != nil {
			return nil
		}
	}
}

// reidentify waits the 1 to 5 s Discord asks between an invalidated
// session and the next IDENTIFY.
func (a *Adapter) reidentify(ctx context.Context) error {
	return retry.Wait(ctx, a.identifyWait/5+rand.N(a.identifyWait*4/5+1))
}

// connect opens a connection and completes its handshake: HELLO, then
// RESUME when there is a session to resume, else IDENTIFY, then READY or
// RESUMED; the events Discord replays before RESUMED are dispatched as
// they come. An op 9 in the handshake forgets the session (when Discord
// says it cannot be resumed) and fails the attempt, which the retry
// policy repeats.
func (a *Adapter) connect(ctx context.Context, s *gatewaySession) (_ *conn, err error) {
	if s.url == "" {
		u, err := a.session.Gateway(discordgo.WithContext(ctx))
		if err != nil {
			return nil, redact(err)
		}
		s.url = u
	}
	resuming := s.id != ""
	addr := s.url
	if resuming && s.resumeURL != "" {
		addr = s.resumeURL
	}
	ws, resp, err := a.dialer.DialContext(ctx, withQuery(addr), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if !resuming {
			s.url = "" // ask again: the address may have moved
		}
		return nil, fmt.Errorf("discord: dial gateway: %w", err)
	}
	c := &conn{ws: ws, stop: make(chan struct{})}
	c.acked.Store(true)
	// The handshake's reads are bounded by the attempt's context.
	unbound := context.AfterFunc(ctx, func() { _ = ws.NetConn().Close() })
	defer func() {
		if !unbound() && err == nil {
			err = ctx.Err()
		}
		if err != nil {
			ended(s, err)
			if errors.Is(err, errInvalidSession) && s.id == "" {
				_ = a.reidentify(ctx)
			}
			if c.interval > 0 {
				c.close(closeResumable)
			} else {
				_ = ws.Close()
			}
		}
	}()
	f, err := c.read()
	if err != nil {
		return nil, fmt.Errorf("discord: read HELLO: %w", err)
	}
	var hello struct {
		Interval int64 `json:"heartbeat_interval"`
	}
	if f.Op != opHello || json.Unmarshal(f.D, &hello) != nil || hello.Interval <= 0 {
		return nil, fmt.Errorf("discord: gateway began with op %d, not HELLO", f.Op)
	}
	c.interval = time.Duration(hello.Interval) * time.Millisecond
	c.beating.Add(1)
	go c.beat(&s.seq)
	if resuming {
		err = c.send(opResume, map[string]any{"token": a.opts.Token, "session_id": s.id, "seq": s.seq.Load()})
	} else {
		err = c.send(opIdentify, map[string]any{
			"token": a.opts.Token, "intents": Intents,
			"properties": map[string]string{"os": runtime.GOOS, "browser": "golem", "device": "golem"},
		})
	}
	if err != nil {
		return nil, fmt.Errorf("discord: send handshake: %w", err)
	}
	for !c.ready {
		f, err := c.read()
		if err != nil {
			return nil, fmt.Errorf("discord: gateway handshake: %w", err)
		}
		if err := a.frame(c, s, f); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// withQuery adds the version and encoding to a gateway address.
func withQuery(addr string) string {
	if addr != "" && addr[len(addr)-1] != '/' {
		addr += "/"
	}
	return addr + "?v=" + gatewayVersion + "&encoding=json"
}

// serve reads and dispatches c's frames until the connection ends (its
// error says why) or ctx does.
func (a *Adapter) serve(ctx context.Context, c *conn, s *gatewaySession) error {
	stop := context.AfterFunc(ctx, func() { // golem stops: Discord may end the session
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = c.ws.NetConn().Close()
	})
	defer stop()
	for {
		f, err := c.read()
		if err != nil {
			return err
		}
		if err := a.frame(c, s, f); err != nil {
			return err
		}
	}
}

// frame acts on one frame of c; an error ends the connection. A dispatch's
// sequence number is kept only once its event is handed on (or journaled),
// so a RESUME after a drop gets again any event not yet taken.
func (a *Adapter) frame(c *conn, s *gatewaySession, f frame) error {
	switch f.Op {
	case opDispatch:
		a.dispatch(c, s, f)
		if f.S > 0 {
			s.seq.Store(f.S)
		}
		a.keepSession(s, f.T == "READY" || f.T == "RESUMED")
	case opHeartbeat:
		return c.heartbeat(s.seq.Load())
	case opHeartbeatACK:
		c.acked.Store(true)
	case opReconnect:
		return errReconnect
	case opInvalidSession:
		var resumable bool
		_ = json.Unmarshal(f.D, &resumable)
		if !resumable {
			s.forget()
		}
		return errInvalidSession
	}
	return nil
}

// dispatch hands one event on. READY starts a session, RESUMED resumes
// one; both make c ready.
func (a *Adapter) dispatch(c *conn, s *gatewaySession, f frame) {
	switch f.T {
	case "READY":
		var r discordgo.Ready
		var more struct {
			ResumeURL string `json:"resume_gateway_url"`
		}
		if err := json.Unmarshal(f.D, &r); err != nil {
			a.log.Error("gateway READY not understood", "err", err)
		}
		_ = json.Unmarshal(f.D, &more)
		s.id, s.resumeURL = r.SessionID, more.ResumeURL
		c.ready = true
		a.onReady(&r)
		a.adoptGone()
	case "RESUMED":
		c.ready = true
		a.log.Info("gateway session resumed")
		a.replayed.Do(a.replay) // a replica that took the session over
		a.adoptGone()
	case "MESSAGE_CREATE":
		var m discordgo.Message
		if err := json.Unmarshal(f.D, &m); err != nil {
			a.log.Error("gateway MESSAGE_CREATE not understood", "err", err)
			return
		}
		a.take(&m)
	case "INTERACTION_CREATE":
		var in discordgo.Interaction
		if err := json.Unmarshal(f.D, &in); err != nil {
			a.log.Error("gateway INTERACTION_CREATE not understood", "err", err)
			return
		}
		a.onInteraction(&in, f.D)
	}
}
