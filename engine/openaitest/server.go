// Package openaitest is a fake OpenAI Responses API for tests that run the
// real Codex CLI offline. It listens on 127.0.0.1, answers POST
// /v1/responses with the API's server-sent events (the only way Codex
// calls it), records every request, and picks the answer from a scenario:
// the first path segment of the base URL the CLI was given, e.g.
//
//	model_providers.fake.base_url = <srv.BaseURL("bash")>   # http://127.0.0.1:PORT/bash/v1
//
// answers with an exec_command call running `echo hi`, then with text once
// its output comes back. Scenarios are stateless functions of the request's
// conversation, so CLI retries do not shift a script out of step.
package openaitest

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
	Path     string // the path without the scenario prefix, e.g. /v1/responses
	Scenario string // the scenario prefix ("" when none)
	Header   http.Header
	Body     []byte

	// Decoded from a responses request's body; zero otherwise.
	Model  string
	Stream bool
	Tools  []json.RawMessage
	Input  []Item
}

// Item is one item of a request's input (the conversation so far): a
// message, a function_call the model made, a function_call_output, a
// custom_tool_call(_output), reasoning... Fields beyond these stay in Raw.
type Item struct {
	Type    string          `json:"type"`
	Role    string          `json:"role,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	Name    string          `json:"name,omitempty"`
	CallID  string          `json:"call_id,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"` // a string, or content parts
	Raw     json.RawMessage `json:"-"`
}

// Text is a message item's text parts joined by newlines.
func (it Item) Text() string {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// OutputText is a function_call_output's output as text.
func (it Item) OutputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Output, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// Responder chooses the answer to one responses request. It is called from
// the server's handler goroutines, possibly concurrently.
type Responder func(r *Request) Reply

// Server is a running fake Responses API. Create it with NewServer; it is
// closed when the test ends.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string

	t   testing.TB
	srv *httptest.Server

	book clitest.Scenarios[Request, Reply]
}

// NewServer starts a fake on 127.0.0.1 with the built-in scenarios (see
// ScenarioText and the others) and closes it when t ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t}
	for name, r := range builtin {
		s.book.Set(name, r)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Handle sets (or replaces) the responder of a scenario, which the CLI
// selects with BaseURL(name). A name is one path segment other than "v1".
func (s *Server) Handle(name string, r Responder) {
	if name == "" || strings.Contains(name, "/") || name == "v1" {
		panic("openaitest: a scenario name is one path segment other than v1")
	}
	s.book.Set(name, r)
}

// BaseURL is the provider base URL that selects scenario name, ending in
// /v1 as OpenAI's own does.
func (s *Server) BaseURL(name string) string { return s.URL + "/" + name + "/v1" }

// ResponseRequests returns the POST /v1/responses requests of scenario, in
// arrival order: the model calls the CLI made.
func (s *Server) ResponseRequests(scenario string) []*Request {
	return s.book.Requests(func(r *Request) bool {
		return r.Scenario == scenario && r.Method == http.MethodPost && r.Path == "/v1/responses"
	})
}

// Unexpected lists "METHOD /path" of the requests the fake did not know
// and answered with 404.
func (s *Server) Unexpected() []string { return s.book.Unexpected() }

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body}
	if rest, ok := strings.CutPrefix(req.Path, "/"); ok {
		seg, tail, _ := strings.Cut(rest, "/")
		if seg != "" && seg != "v1" {
			req.Scenario, req.Path = seg, "/"+tail
		}
	}
	respond, known := s.book.Take(req, req.Scenario)

	if req.Method != http.MethodPost || req.Path != "/v1/responses" {
		s.book.Miss(req.Method + " " + hr.URL.Path)
		writeAPIError(w, http.StatusNotFound, "not_found", "openaitest: no such endpoint")
		return
	}
	if err := req.decode(); err != nil {
		s.t.Logf("openaitest: bad responses request: %v", err)
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if !known {
		s.t.Logf("openaitest: unknown scenario %q (known: %v)", req.Scenario, s.book.Names())
		writeAPIError(w, http.StatusNotFound, "not_found", "openaitest: unknown scenario "+req.Scenario)
		return
	}
	reply := respond(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeAPIError(w, reply.Status, reply.ErrorType, reply.ErrorMessage)
		return
	}
	writeStream(w, req, reply)
}

// decode fills the responses-request fields from Body.
func (r *Request) decode() error {
	var b struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
		Input  []json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(bytes.NewReader(r.Body)).Decode(&b); err != nil {
		return fmt.Errorf("decode responses request: %w", err)
	}
	r.Model, r.Stream, r.Tools = b.Model, b.Stream, b.Tools
	for _, raw := range b.Input {
		var it Item
		if err := json.Unmarshal(raw, &it); err != nil {
			return fmt.Errorf("decode input item: %w", err)
		}
		it.Raw = raw
		r.Input = append(r.Input, it)
	}
	return nil
}

// ToolNames lists the names of the function tools the request offers.
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

// LastUser is the text of the request's last user message ("" when none).
func (r *Request) LastUser() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		if it := r.Input[i]; it.Type == "message" && it.Role == "user" {
			return it.Text()
		}
	}
	return ""
}

// Messages returns "role: text" for each message item of the input, in
// order: the conversation as the model sees it.
func (r *Request) Messages() []string {
	var out []string
	for _, it := range r.Input {
		if it.Type == "message" {
			out = append(out, it.Role+": "+it.Text())
		}
	}
	return out
}

// Outputs returns the tool outputs (function_call_output and
// custom_tool_call_output items) since the last user message: the answers
// to the model's previous calls.
func (r *Request) Outputs() []Item {
	var out []Item
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		if it.Type == "message" && it.Role == "user" {
			break
		}
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			out = append([]Item{it}, out...)
		}
	}
	return out
}

// Step counts the model's tool calls since the last user message: 0 for
// the first model call of a prompt, 1 after one call's output came back.
func (r *Request) Step() int {
	n := 0
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		if it.Type == "message" && it.Role == "user" {
			break
		}
		if it.Type == "function_call" || it.Type == "custom_tool_call" {
			n++
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "req_openaitest")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeAPIError answers as the OpenAI API does on failure, e.g. 400
// {"error":{"message":"...","type":"invalid_request_error","code":null}}.
func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = "server_error"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}
