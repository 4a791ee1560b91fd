package discordtest

import (
	"bytes"
	"encoding/json"
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
