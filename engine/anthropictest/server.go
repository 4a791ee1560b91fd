// Package anthropictest is a fake Anthropic Messages API for tests that run
// the real Claude Code CLI offline. It listens on 127.0.0.1, answers the
// requests the CLI makes (HEAD /, POST /v1/messages with and without
// "stream": true, token counting), records every request body, and picks
// the answer from a scenario: the first path segment of the base URL the
// CLI was given (the CLI keeps a path prefix), e.g.
//
//	ANTHROPIC_BASE_URL=<srv.BaseURL("bash")>
//
// answers with a Bash tool use, then with text once the tool result comes
// back. Scenarios are stateless functions of the request's conversation, so
// CLI retries and side requests do not shift a script out of step.
package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// Request is one HTTP request the fake received, as the CLI sent it.
type Request struct {
	Method   string
	Path     string // the path without the scenario prefix, e.g. /v1/messages
	RawQuery string
	Scenario string // the scenario prefix ("" when none)
	Header   http.Header
	Body     []byte

	// Decoded from a messages request's body; zero otherwise.
	Model    string
	Stream   bool
	System   json.RawMessage
	Tools    []json.RawMessage
	Messages []Message
}

// Message is one message of a messages request's conversation. A string
// content is normalized into one text block.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"-"`
}

// ContentBlock is one block of a request message: text, tool_use,
// tool_result, thinking, image... Fields beyond these stay in Raw.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a tool_result's string or block array
	Raw       json.RawMessage `json:"-"`
}

// ResultText is a tool_result block's content as text: the string itself,
// or the text blocks of an array joined.
func (b ContentBlock) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		if p.Type == "text" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// UnmarshalJSON accepts content as a string or as an array of blocks.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []ContentBlock{{Type: "text", Text: s}}
		return nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw.Content, &blocks); err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	for _, rb := range blocks {
		var b ContentBlock
		if err := json.Unmarshal(rb, &b); err != nil {
			return fmt.Errorf("content block: %w", err)
		}
		b.Raw = rb
		m.Content = append(m.Content, b)
	}
	return nil
}

// Text is the message's text blocks joined by newlines.
func (m Message) Text() string {
	var out []string
	for _, b := range m.Content {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return strings.Join(out, "\n")
}

// Responder chooses the answer to one messages request. It is called from
// the server's handler goroutines, possibly concurrently.
type Responder func(r *Request) Reply

// Server is a running fake Messages API. Create it with NewServer; it is
// closed when the test ends.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string

	t   testing.TB
	srv *httptest.Server

	book clitest.Scenarios[Request, Reply]
}

// NewServer starts a fake on 127.0.0.1 with the built-in scenarios (see
// ScenarioText and the others) and closes it when t ends. The base URL
// without a scenario (URL itself) answers as ScenarioText until Handle("")
// says otherwise.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t}
	for name, r := range builtin {
		s.book.Set(name, r)
	}
	s.book.Set("", builtin[ScenarioText])
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Handle sets (or replaces) the responder of a scenario, which the CLI
// selects with BaseURL(name); name "" is the base URL without a scenario.
// A name is one path segment other than "v1" and "api".
func (s *Server) Handle(name string, r Responder) {
	if strings.Contains(name, "/") || name == "v1" || name == "api" {
		panic("anthropictest: a scenario name is one path segment other than v1 and api")
	}
	s.book.Set(name, r)
}

// BaseURL is the ANTHROPIC_BASE_URL that selects scenario name.
func (s *Server) BaseURL(name string) string { return s.URL + "/" + name }

// Requests returns the requests received so far, in arrival order. With a
// scenario name, only that scenario's requests.
func (s *Server) Requests(scenario ...string) []*Request {
	return s.book.Requests(func(r *Request) bool { return len(scenario) == 0 || r.Scenario == scenario[0] })
}

// MessageRequests returns the POST /v1/messages requests of scenario, in
// arrival order: the model calls the CLI made.
func (s *Server) MessageRequests(scenario string) []*Request {
	var out []*Request
	for _, r := range s.Requests(scenario) {
		if r.Method == http.MethodPost && r.Path == "/v1/messages" {
			out = append(out, r)
		}
	}
	return out
}

// Unexpected lists "METHOD /path" of the requests the fake did not know
// and answered with 404.
func (s *Server) Unexpected() []string { return s.book.Unexpected() }

// scenarioNames lists the known scenarios, sorted, for error messages.

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{
		Method:   hr.Method,
		Path:     hr.URL.Path,
		RawQuery: hr.URL.RawQuery,
		Header:   hr.Header.Clone(),
		Body:     body,
	}
	// The first segment is a scenario when it is not the API's own "v1".
	if rest, ok := strings.CutPrefix(req.Path, "/"); ok {
		seg, tail, _ := strings.Cut(rest, "/")
		if seg != "" && seg != "v1" && seg != "api" {
			req.Scenario, req.Path = seg, "/"+tail
		}
	}
	respond, known := s.book.Take(req, req.Scenario)

	switch {
	case req.Method == http.MethodHead || (req.Method == http.MethodGet && req.Path == "/"):
		w.WriteHeader(http.StatusOK)
	case req.Method == http.MethodPost && req.Path == "/v1/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": 100 + len(body)/4})
	case req.Method == http.MethodPost && req.Path == "/v1/messages":
		if err := req.decode(); err != nil {
			s.t.Logf("anthropictest: bad messages request: %v", err)
			writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		if !known {
			s.t.Logf("anthropictest: unknown scenario %q (known: %v)", req.Scenario, s.book.Names())
			writeAPIError(w, http.StatusNotFound, "not_found_error", "anthropictest: unknown scenario "+req.Scenario)
			return
		}
		reply := respond(req)
		if reply.Status != 0 && reply.Status != http.StatusOK {
			writeAPIError(w, reply.Status, reply.ErrorType, reply.ErrorMessage)
			return
		}
		if req.Stream {
			writeStream(w, req, reply)
		} else {
			writeJSON(w, http.StatusOK, messageJSON(req, reply))
		}
	default:
		s.book.Miss(req.Method + " " + hr.URL.Path)
		s.t.Logf("anthropictest: unexpected request %s %s", req.Method, hr.URL.RequestURI())
		writeAPIError(w, http.StatusNotFound, "not_found_error", "anthropictest: no such endpoint")
	}
}

// decode fills the messages-request fields from Body.
func (r *Request) decode() error {
	var b struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		System   json.RawMessage   `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []Message         `json:"messages"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	if err := dec.Decode(&b); err != nil {
		return fmt.Errorf("decode messages request: %w", err)
	}
	r.Model, r.Stream, r.System, r.Tools, r.Messages = b.Model, b.Stream, b.System, b.Tools, b.Messages
	return nil
}

// ToolNames lists the names of the tools the request offers the model.
func (r *Request) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		var v struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &v) == nil && v.Name != "" {
			names = append(names, v.Name)
		}
	}
	return names
}

// LastUser is the request's last user message (zero when none).
func (r *Request) LastUser() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i]
		}
	}
	return Message{}
}

// ToolResults returns the tool_result blocks of the last user message, the
// answers to the model's previous tool uses.
func (r *Request) ToolResults() []ContentBlock {
	var out []ContentBlock
	for _, b := range r.LastUser().Content {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// Step counts the assistant messages since the last user message that is
// not only tool results: 0 for the first model call of a prompt, 1 after
// one round of tool use, and so on.
func (r *Request) Step() int {
	n := 0
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "assistant" {
			n++
			continue
		}
		if m.Role == "user" && !onlyToolResults(m) {
			break
		}
	}
	return n
}

func onlyToolResults(m Message) bool {
	has := false
	for _, b := range m.Content {
		switch b.Type {
		case "tool_result":
			has = true
		case "text":
			// The CLI may add reminders beside tool results.
		default:
			return false
		}
	}
	return has
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_anthropictest")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeAPIError answers as the Messages API does on failure, e.g. 529
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = "api_error"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{
		"type":       "error",
		"error":      map[string]string{"type": typ, "message": msg},
		"request_id": "req_anthropictest",
	})
}
