package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

func TestChatStreamsEventsInOrder(t *testing.T) {
	turn := []parser.Event{
		{Type: parser.Text, Content: "Hel"},
		{Type: parser.Text, Content: "lo <b>\"world\"</b>\n"},
		{Type: parser.ToolCall, ID: "t1", Name: "Bash", Args: json.RawMessage(`{"command":"ls -la"}`)},
		{Type: parser.ToolResult, ID: "t1", Content: "a\nb", IsError: false},
		{Type: parser.Warning, Message: "careful"},
		{Type: parser.Text, Content: "done."},
		{Type: parser.Done, SessionID: "s-1", Stats: &parser.RunStats{DurationMS: ptr[int64](0), CostUSD: ptr(0.0123), NumTurns: ptr(2)}},
	}
	// The event after the terminal one must never reach the client.
	events := append(append([]parser.Event(nil), turn...), parser.Event{Type: parser.Text, Content: "late"})
	got := make(chan core.Message, 1)
	// Keep-alive comments between the events must not disturb the framing.
	_, base := serve(t, Options{}, script(2*time.Millisecond, got, events...), func(s *Server) { s.heartbeat = time.Millisecond })

	res := postChat(t, base, `{"conversation":"c-42","text":"say hello"}`)
	sse := newSSEReader(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	if got := sse.readAll(t); strings.Join(got, "\n") != strings.Join(wire(t, turn...), "\n") {
		t.Errorf("stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wire(t, turn...), "\n"))
	}
	if sse.comments == 0 {
		t.Error("no keep-alive comment in a stream with a 1 ms heartbeat")
	}

	m := <-got
	if m.Platform != "http" || m.Channel != "c-42" || m.User != "http" || m.EventID != "" || m.Text != "say hello" || m.Sink == nil {
		t.Errorf("message = %+v", m)
	}
	if k := core.KeyFor(m, core.ScopeChannel).String(); k != "http::c-42" {
		t.Errorf("channel-scope key = %q", k)
	}
	if a, b := core.KeyFor(m, core.ScopeThread), core.KeyFor(core.Message{Platform: "http", Channel: "c-42", Thread: "c-42", ID: "other"}, core.ScopeThread); a != b {
		t.Errorf("thread-scope keys of one conversation differ: %v, %v", a, b)
	}
}

// TestChatFlushesEachEvent checks that an event reaches the client while the
// turn is still running, not when it ends.
func TestChatFlushesEachEvent(t *testing.T) {
	release := make(chan struct{})
	h := fakeHandler{handle: func(_ context.Context, m core.Message) {
		go func() {
			m.Sink(parser.Event{Type: parser.Text, Content: "first"})
			<-release
			m.Sink(parser.Event{Type: parser.Done, SessionID: "s"})
		}()
	}}
	_, base := serve(t, Options{}, h)
	res := postChat(t, base, `{"conversation":"c","text":"hi"}`)
	sse := newSSEReader(res.Body)
	first, err := sse.next()
	if err != nil {
		t.Fatal(err)
	}
	if first != `{"type":"text","content":"first"}` {
		t.Errorf("first event %s", first)
	}
	close(release)
	if rest := sse.readAll(t); len(rest) != 1 || rest[0] != `{"type":"done","session_id":"s"}` {
		t.Errorf("rest %q", rest)
	}
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token"
	ok := script(0, nil, parser.Event{Type: parser.Done, SessionID: "s"})
	for _, tc := range []struct {
		name   string
		token  string // configured
		header string // Authorization sent
		status int
	}{
		{"open server, no header", "", "", 200},
		{"no header", token, "", 401},
		{"wrong token", token, "Bearer nope", 401},
		{"token with a suffix", token, "Bearer " + token + "x", 401},
		{"not bearer", token, "Basic " + token, 401},
		{"right token", token, "Bearer " + token, 200},
		{"scheme is case-insensitive", token, "bearer " + token, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := serve(t, Options{Token: tc.token}, ok)
			var hdr []string
			if tc.header != "" {
				hdr = []string{"Authorization", tc.header}
			}
			res := postChat(t, base, `{"conversation":"c","text":"hi"}`, hdr...)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if tc.status == 401 {
				errorBody(t, res)
				if res.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				return
			}
			if got := newSSEReader(res.Body).readAll(t); len(got) != 1 {
				t.Errorf("events %q", got)
			}
		})
	}

	t.Run("healthz and the page stay open", func(t *testing.T) {
		_, base := serve(t, Options{Token: token}, refuse(t))
		for _, path := range []string{"/healthz", "/", "/app.js", "/style.css"} {
			res, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Errorf("GET %s: status %d", path, res.StatusCode)
			}
		}
	})
}

func TestNewRefusesNonLoopbackWithoutToken(t *testing.T) {
	for _, tc := range []struct {
		listen, token string
		refused       bool
	}{
		{"127.0.0.1:8080", "", false},
		{"127.1.2.3:8080", "", false},
		{"localhost:8080", "", false},
		{"[::1]:8080", "", false},
		{"0.0.0.0:8080", "", true},
		{":8080", "", true},
		{"[::]:8080", "", true},
		{"192.0.2.10:8080", "", true},
		{"golem.example:8080", "", true},
		{"0.0.0.0:8080", "t", false},
		{":8080", "t", false},
	} {
		_, err := New(Options{Listen: tc.listen, Token: tc.token})
		if refused := errors.Is(err, ErrInsecureListen); refused != tc.refused {
			t.Errorf("New(%q, token %q) = %v; refused %v, want %v", tc.listen, tc.token, err, refused, tc.refused)
		}
		if !tc.refused && err != nil {
			t.Errorf("New(%q): %v", tc.listen, err)
		}
	}
	if _, err := New(Options{Listen: "no-port"}); err == nil {
		t.Error("New accepted an address without a port")
	}
}

func TestChatRefusesBadRequests(t *testing.T) {
	long := strings.Repeat("x", MaxConversationLen+1)
	for _, tc := range []struct {
		name    string
		body    string
		headers []string
		status  int
	}{
		{"not JSON", `{"conversation":`, nil, 400},
		{"two values", `{"conversation":"c","text":"a"}{}`, nil, 400},
		{"unknown field", `{"conversation":"c","text":"a","txt":"b"}`, nil, 400},
		{"wrong type", `{"conversation":1,"text":"a"}`, nil, 400},
		{"no conversation", `{"text":"a"}`, nil, 400},
		{"conversation too long", `{"conversation":"` + long + `","text":"a"}`, nil, 400},
		{"no text", `{"conversation":"c"}`, nil, 400},
		{"empty text", `{"conversation":"c","text":""}`, nil, 400},
		{"body over the limit", `{"conversation":"c","text":"` + strings.Repeat("a", 300) + `"}`, nil, 413},
		{"text/plain (a cross-site form post)", `{"conversation":"c","text":"a"}`, []string{"Content-Type", "text/plain"}, 415},
		{"cross-origin", `{"conversation":"c","text":"a"}`, []string{"Origin", "http://evil.example"}, 403},
		{"DNS rebinding (foreign Host, no token)", `{"conversation":"c","text":"a"}`, []string{"Host", "evil.example:8080"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := serve(t, Options{MaxBody: 256}, refuse(t))
			res := postChat(t, base, tc.body, tc.headers...)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			errorBody(t, res)
		})
	}
	t.Run("conversation at the limit is fine", func(t *testing.T) {
		_, base := serve(t, Options{}, script(0, nil, parser.Event{Type: parser.Done}))
		res := postChat(t, base, `{"conversation":"`+long[1:]+`","text":"a"}`)
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
	t.Run("same origin is fine", func(t *testing.T) {
		_, base := serve(t, Options{}, script(0, nil, parser.Event{Type: parser.Done}))
		res := postChat(t, base, `{"conversation":"c","text":"a"}`, "Origin", base)
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
	t.Run("GET /v1/chat", func(t *testing.T) {
		_, base := serve(t, Options{}, refuse(t))
		res, err := http.Get(base + "/v1/chat")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("status %d", res.StatusCode)
		}
	})
}

// TestClientDisconnectDoesNotBlockTheTurn: a client that stops reading or
// goes away mid-stream must never stall the dispatcher's sink, and the
// stream's handler must end.
func TestClientDisconnectDoesNotBlockTheTurn(t *testing.T) {
	gone := make(chan struct{})
	finished := make(chan struct{})
	var pushed atomic.Int64
	big := strings.Repeat("z", 1024)
	h := fakeHandler{handle: func(_ context.Context, m core.Message) {
		go func() {
			defer close(finished)
			m.Sink(parser.Event{Type: parser.Text, Content: "first"})
			// 20 MB while the client does not read: more than any socket
			// buffer holds, so a blocking sink would stall here.
			for range 20_000 {
				m.Sink(parser.Event{Type: parser.Text, Content: big})
				pushed.Add(1)
			}
			<-gone
			for range 1000 {
				m.Sink(parser.Event{Type: parser.Text, Content: "after"})
			}
			m.Sink(parser.Event{Type: parser.Done, SessionID: "s"})
		}()
	}}
	s, base := serve(t, Options{}, h)
	res := postChat(t, base, `{"conversation":"c","text":"hi"}`)
	if first, err := newSSEReader(res.Body).next(); err != nil || !strings.Contains(first, "first") {
		t.Fatalf("first event %q, %v", first, err)
	}
	eventually(t, "the turn has pushed 20 MB past a client that does not read", func() bool { return pushed.Load() == 20_000 })
	res.Body.Close() // the client goes away
	close(gone)
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("the turn blocked on the sink of a gone client")
	}
	eventually(t, "the stream's handler has returned", func() bool { return s.streams.count() == 0 })
}

// TestStartStopsWithOpenStream: shutdown must not hang on a stream whose
// turn never ends.
func TestStartStopsWithOpenStream(t *testing.T) {
	ln, base := listen(t)
	s, err := New(Options{Listener: ln, ShutdownGrace: 50 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	h := fakeHandler{handle: func(_ context.Context, m core.Message) {
		m.Sink(parser.Event{Type: parser.Text, Content: "forever"})
		close(started)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx, h) }()
	res := postChat(t, base, `{"conversation":"c","text":"hi"}`)
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return")
	}
	// The stream was cut, not ended by a terminal event.
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), "forever") || strings.Contains(string(b), "done") {
		t.Errorf("stream of the cut turn: %q", b)
	}
}

func TestHealthz(t *testing.T) {
	_, base := serve(t, Options{}, refuse(t))
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(b) != "ok" {
		t.Errorf("healthz: %d %q", res.StatusCode, b)
	}
}

func TestPageAndAssetsForbidExternalLoads(t *testing.T) {
	_, base := serve(t, Options{}, refuse(t))
	for _, path := range []string{"/", "/app.js", "/style.css"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if res.StatusCode != 200 || !strings.HasPrefix(csp, "default-src 'none';") || strings.Contains(csp, "http") || strings.Contains(csp, "*") {
			t.Errorf("GET %s: %d, Content-Security-Policy %q", path, res.StatusCode, csp)
		}
	}
}

func TestStartFailsWhenAddressIsTaken(t *testing.T) {
	ln, _ := listen(t)
	s, err := New(Options{Listen: ln.Addr().String(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), refuse(t)); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Start on a taken address: %v", err)
	}
}
