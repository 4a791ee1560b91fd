package discordtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func do(t *testing.T, s *Server, method, path, body string, bot bool) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+"/api/v9"+path, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	if bot {
		req.Header.Set("Authorization", "Bot "+s.Options().BotToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header
}

func TestRESTErrorsLikeDiscord(t *testing.T) {
	s := New(Options{ChannelLimit: 2, ChannelWindow: time.Minute, TokenLife: time.Nanosecond})
	defer s.Close()
	long := `{"content":"` + strings.Repeat("é", 2001) + `"}`
	tests := []struct {
		name         string
		method, path string
		body         string
		bot          bool
		status, code int
	}{
		{"no bot token", "POST", "/channels/c1/messages", `{"content":"a"}`, false, 401, 0},
		{"over 2,000 characters", "POST", "/channels/c1/messages", long, true, 400, 50035},
		{"first in budget", "POST", "/channels/c1/messages", `{"content":"a"}`, true, 200, 0},
		{"second in budget", "POST", "/channels/c1/messages", `{"content":"b"}`, true, 200, 0},
		{"over budget", "POST", "/channels/c1/messages", `{"content":"c"}`, true, 429, 0},
		{"other channel has its own budget", "POST", "/channels/c2/messages", `{"content":"d"}`, true, 200, 0},
		{"unknown interaction", "POST", "/interactions/1/nope/callback", `{"type":5}`, false, 404, 10062},
	}
	for _, tt := range tests {
		status, body, h := do(t, s, tt.method, tt.path, tt.body, tt.bot)
		code, _ := body["code"].(float64)
		if status != tt.status || int(code) != tt.code {
			t.Errorf("%s: %d code %v, want %d code %d", tt.name, status, body["code"], tt.status, tt.code)
		}
		if status == 429 {
			ra, _ := body["retry_after"].(float64)
			if ra <= 0 || ra > 60 || h.Get("X-RateLimit-Remaining") != "0" || h.Get("Retry-After") == "" {
				t.Errorf("429 body %v headers %v", body, h)
			}
		}
	}

	id := s.Command(Slash{Channel: "c3", Guild: "g", User: "u", Name: "ask"})
	in, _ := s.Interaction(id)
	if status, _, _ := do(t, s, "POST", "/interactions/"+id+"/"+in.Token+"/callback", `{"type":5}`, false); status != 204 {
		t.Fatalf("callback: %d", status)
	}
	if status, _, _ := do(t, s, "POST", "/interactions/"+id+"/"+in.Token+"/callback", `{"type":5}`, false); status != 400 {
		t.Errorf("second callback: %d, want 400 (already acknowledged)", status)
	}
	status, body, _ := do(t, s, "PATCH", "/webhooks/100/"+in.Token+"/messages/@original", `{"content":"x"}`, false)
	if code, _ := body["code"].(float64); status != 401 || code != 50027 {
		t.Errorf("edit with an expired token: %d %v, want 401 code 50027", status, body)
	}
}

func TestGatewayHandshake(t *testing.T) {
	s := New(Options{HeartbeatInterval: 50 * time.Millisecond})
	defer s.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/gateway/?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var f struct {
		Op int             `json:"op"`
		T  string          `json:"t"`
		S  int64           `json:"s"`
		D  json.RawMessage `json:"d"`
	}
	read := func() {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := c.ReadJSON(&f); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if f.Op != 10 || !strings.Contains(string(f.D), `"heartbeat_interval":50`) {
		t.Fatalf("first frame %+v, want HELLO", f)
	}
	_ = c.WriteJSON(map[string]any{"op": 2, "d": map[string]any{"token": "Bot test-token", "intents": 33281}})
	read()
	if f.Op != 0 || f.T != "READY" || f.S != 1 || !strings.Contains(string(f.D), `"session_id":"session-1"`) {
		t.Fatalf("after IDENTIFY: %+v", f)
	}
	_ = c.WriteJSON(map[string]any{"op": 1, "d": 1})
	read()
	if f.Op != 11 {
		t.Fatalf("after heartbeat: %+v, want ACK", f)
	}
	s.Post(UserMessage{Channel: "c", Guild: "g", User: "u", Content: "hi"})
	read()
	if f.T != "MESSAGE_CREATE" || f.S != 2 || !strings.Contains(string(f.D), `"content":"hi"`) {
		t.Fatalf("dispatch: %+v", f)
	}
	var intents int
	s.Wait(time.Second, func(v View) bool { intents = v.Intents(); return true })
	if intents != 33281 {
		t.Errorf("intents = %d", intents)
	}
}

// TestNonce: with enforce_nonce a repeated nonce answers the message it
// made and makes none; without it, or with another nonce, a new message
// is made; a nonce over 25 characters is refused.
func TestNonce(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	post := func(body string) (int, string, float64) {
		status, out, _ := do(t, s, "POST", "/channels/c1/messages", body, true)
		id, _ := out["id"].(string)
		code, _ := out["code"].(float64)
		return status, id, code
	}
	_, first, _ := post(`{"content":"a","nonce":"n1","enforce_nonce":true}`)
	if _, again, _ := post(`{"content":"a","nonce":"n1","enforce_nonce":true}`); again != first || first == "" {
		t.Errorf("a repeated nonce made %q after %q", again, first)
	}
	if _, other, _ := post(`{"content":"a","nonce":"n2","enforce_nonce":true}`); other == first {
		t.Error("another nonce answered the first message")
	}
	if _, loose, _ := post(`{"content":"a","nonce":"n1"}`); loose == first {
		t.Error("a nonce without enforce_nonce was enforced")
	}
	if status, _, code := post(`{"content":"a","nonce":"` + strings.Repeat("1", 26) + `","enforce_nonce":true}`); status != 400 || code != 50035 {
		t.Errorf("a 26-character nonce: %d %v", status, code)
	}
	if n := len(s.Messages("c1")); n != 3 {
		t.Errorf("%d messages, want 3", n)
	}
}

func TestAddReaction(t *testing.T) {
	s := New(Options{})
	t.Cleanup(s.Close)
	id := s.Post(UserMessage{Channel: "c1", Guild: "g1", User: "u1", Content: "hi"})
	put := func(channel, msg, emoji string) int {
		req, _ := http.NewRequest(http.MethodPut, s.URL()+"/api/v9/channels/"+channel+"/messages/"+msg+"/reactions/"+url.PathEscape(emoji)+"/@me", nil)
		req.Header.Set("Authorization", "Bot "+s.Options().BotToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		channel, msg, emoji string
		want                int
	}{
		{"c1", "404404", "👀", http.StatusNotFound},
		{"c2", id, "👀", http.StatusNotFound},
		{"c1", id, "eyes", http.StatusBadRequest},
		{"c1", id, "👀", http.StatusNoContent},
		{"c1", id, "👀", http.StatusNoContent},
		{"c1", id, "party:123456789012345678", http.StatusNoContent},
	} {
		if got := put(c.channel, c.msg, c.emoji); got != c.want {
			t.Errorf("PUT %s/%s/%s: %d, want %d", c.channel, c.msg, c.emoji, got, c.want)
		}
	}
	if m, _ := s.Message(id); !slices.Equal(m.Reactions, []string{"👀", "party:123456789012345678"}) {
		t.Errorf("reactions %v", m.Reactions)
	}
}

// A request held by Failure.Until counts in Holding until it is released,
// then is served as usual.
func TestHolding(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	release := make(chan struct{})
	s.Fail("POST /channels/c1/messages$", 1, Failure{Until: release})
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.URL()+"/api/v9/channels/c1/messages", strings.NewReader(`{"content":"a"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bot "+s.Options().BotToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	if !s.Wait(5*time.Second, func(v View) bool { return v.Holding() == 1 }) {
		t.Fatal("the request is not held")
	}
	close(release)
	if status := <-done; status != 200 {
		t.Fatalf("the released request answered %d", status)
	}
	if !s.Wait(5*time.Second, func(v View) bool { return v.Holding() == 0 && len(v.Messages("c1")) == 1 }) {
		t.Error("the released request is still held or did not post")
	}
}

// wsClient is a raw gateway connection for the fake's own tests.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

type wsFrame struct {
	Op int             `json:"op"`
	T  string          `json:"t"`
	S  int64           `json:"s"`
	D  json.RawMessage `json:"d"`
}

func dialGateway(t *testing.T, url string) *wsClient {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(url+"/?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := &wsClient{t: t, c: c}
	if f := w.read(); f.Op != 10 {
		t.Fatalf("first frame %+v, want HELLO", f)
	}
	return w
}

func (w *wsClient) send(op int, d any) {
	w.t.Helper()
	if err := w.c.WriteJSON(map[string]any{"op": op, "d": d}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wsClient) read() wsFrame {
	w.t.Helper()
	var f wsFrame
	_ = w.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := w.c.ReadJSON(&f); err != nil {
		w.t.Fatal(err)
	}
	return f
}

// closed reads until the server closes the connection and returns its
// close code.
func (w *wsClient) closed() int {
	w.t.Helper()
	_ = w.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var f wsFrame
		err := w.c.ReadJSON(&f)
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		if err != nil {
			w.t.Fatalf("read: %v, want a close frame", err)
		}
	}
}

// TestGatewayIsStrict: RESUME works only at READY's resume_gateway_url
// with the session's id, replaying what came after its seq before
// RESUMED; after op 9 d=false only IDENTIFY gets a session; a second
// IDENTIFY, a request before IDENTIFY, an unknown opcode and a seq from
// the future close the connection with Discord's codes.
func TestGatewayIsStrict(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	main := "ws" + strings.TrimPrefix(s.URL(), "http") + "/gateway"
	identify := map[string]any{"token": "test-token", "intents": 1}

	a := dialGateway(t, main)
	a.send(2, identify)
	ready := a.read()
	var r struct {
		SessionID string `json:"session_id"`
		ResumeURL string `json:"resume_gateway_url"`
	}
	_ = json.Unmarshal(ready.D, &r)
	if ready.T != "READY" || r.SessionID == "" || r.ResumeURL == "" || r.ResumeURL == main {
		t.Fatalf("READY %+v, want a session and a resume_gateway_url of its own", r)
	}
	s.Post(UserMessage{Channel: "c", Guild: "g", User: "u", Content: "seen"})
	if f := a.read(); f.S != 2 {
		t.Fatalf("dispatch %+v", f)
	}
	a.send(2, identify)
	if code := a.closed(); code != 4005 {
		t.Errorf("second IDENTIFY closed with %d, want 4005", code)
	}
	s.Post(UserMessage{Channel: "c", Guild: "g", User: "u", Content: "missed 1"})
	s.Post(UserMessage{Channel: "c", Guild: "g", User: "u", Content: "missed 2"})

	resume := map[string]any{"token": "test-token", "session_id": r.SessionID, "seq": 2}
	b := dialGateway(t, main)
	b.send(6, resume)
	if f := b.read(); f.Op != 9 || string(f.D) != "false" {
		t.Errorf("RESUME at the main gateway: %+v, want op 9 d=false", f)
	}

	c := dialGateway(t, r.ResumeURL)
	c.send(6, resume)
	for _, want := range []string{"missed 1", "missed 2"} {
		if f := c.read(); f.T != "MESSAGE_CREATE" || !strings.Contains(string(f.D), want) {
			t.Fatalf("replay: %+v, want %q", f, want)
		}
	}
	if f := c.read(); f.T != "RESUMED" || f.S != 5 {
		t.Fatalf("after the replay: %+v, want RESUMED with seq 5", f)
	}

	d := dialGateway(t, r.ResumeURL)
	d.send(6, map[string]any{"token": "test-token", "session_id": r.SessionID, "seq": 99})
	if code := d.closed(); code != 4007 {
		t.Errorf("RESUME from seq 99 closed with %d, want 4007", code)
	}

	s.InvalidSession()
	if f := c.read(); f.Op != 9 || string(f.D) != "false" {
		t.Fatalf("InvalidSession sent %+v", f)
	}
	e := dialGateway(t, r.ResumeURL)
	e.send(6, resume)
	if f := e.read(); f.Op != 9 {
		t.Errorf("RESUME of an invalidated session: %+v, want op 9", f)
	}
	e.send(2, identify)
	if f := e.read(); f.T != "READY" || f.S != 1 || strings.Contains(string(f.D), r.SessionID+`"`) {
		t.Errorf("IDENTIFY after op 9: %+v, want a new session from seq 1", f)
	}

	g := dialGateway(t, main)
	g.send(3, map[string]any{"status": "online"})
	if code := g.closed(); code != 4003 {
		t.Errorf("presence before IDENTIFY closed with %d, want 4003", code)
	}
	h := dialGateway(t, main)
	h.send(42, nil)
	if code := h.closed(); code != 4001 {
		t.Errorf("op 42 closed with %d, want 4001", code)
	}
}
