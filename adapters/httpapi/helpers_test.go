package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// fakeHandler is a function-field core.Handler: each test scripts what the
// "dispatcher" does with a message.
type fakeHandler struct {
	handle func(ctx context.Context, m core.Message)
}

func (f fakeHandler) Handle(ctx context.Context, m core.Message) { f.handle(ctx, m) }

func (fakeHandler) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

// script returns a handler that answers every message by sending events to
// its sink from another goroutine, gap apart, like a running turn. Each
// message it got is sent to got when got is not nil.
func script(gap time.Duration, got chan<- core.Message, events ...parser.Event) fakeHandler {
	return fakeHandler{handle: func(_ context.Context, m core.Message) {
		if got != nil {
			got <- m
		}
		go func() {
			for _, e := range events {
				time.Sleep(gap)
				m.Sink(e)
			}
		}()
	}}
}

// refuse is a handler that must never be reached.
func refuse(t *testing.T) fakeHandler {
	return fakeHandler{handle: func(_ context.Context, m core.Message) {
		t.Errorf("the handler got a message that should have been refused: %+v", m)
		m.Sink(parser.Event{Type: parser.Error, Message: "refused"})
	}}
}

// serve starts a Server on a fresh 127.0.0.1 port and returns it with its
// base URL; setup, when given, adjusts the server before it starts. The
// server stops at the end of the test; Start must return nil.
func serve(t *testing.T, opts Options, h core.Handler, setup ...func(*Server)) (*Server, string) {
	t.Helper()
	ln, base := listen(t)
	opts.Listener = ln
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v after a clean stop", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Start did not return after its context was cancelled")
		}
	})
	return s, base
}

// listen opens a listener on a fresh 127.0.0.1 port, closed at the end of
// the test, and returns it with its base URL.
func listen(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, "http://" + ln.Addr().String()
}

// testLogger logs at debug level into the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// postChat posts body to /v1/chat with a JSON content type and the given
// extra headers (pairs of name, value).
func postChat(t *testing.T, base, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// sseReader reads a text/event-stream strictly: every frame must be either
// one "data: " line or one comment line, each followed by a blank line.
type sseReader struct {
	r        *bufio.Reader
	comments int
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// next returns the payload of the next data frame, skipping comments, or
// io.EOF at a clean end of the stream.
func (s *sseReader) next() (string, error) {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				return "", io.EOF
			}
			return "", errors.New("stream cut inside a frame: " + line)
		}
		blank, err := s.r.ReadString('\n')
		if err != nil || blank != "\n" {
			return "", errors.New("frame not ended by a blank line after " + line)
		}
		switch {
		case strings.HasPrefix(line, ":"):
			s.comments++
		case strings.HasPrefix(line, "data: "):
			return strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n"), nil
		default:
			return "", errors.New("unexpected SSE line " + line)
		}
	}
}

// readAll returns every data payload until the end of the stream.
func (s *sseReader) readAll(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		d, err := s.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, d)
	}
}

func wire(t *testing.T, events ...parser.Event) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// errorBody decodes a JSON error answer.
func errorBody(t *testing.T, res *http.Response) string {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("error body is not JSON: %v", err)
	}
	if body.Error == "" {
		t.Error(`error body has no "error"`)
	}
	return body.Error
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
