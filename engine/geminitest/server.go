// Package geminitest is a fake Gemini API (generativelanguage v1beta) for
// tests that run the real Gemini CLI offline. It listens on 127.0.0.1,
// answers POST /v1beta/models/MODEL:streamGenerateContent?alt=sse with the
// API's server-sent events and :generateContent with JSON (the CLI's model
// router asks that for a JSON verdict, which the fake derives from the
// request's schema), records every request, and picks the answer from a
// scenario: the first path segment of the base URL the CLI was given, e.g.
//
//	GOOGLE_GEMINI_BASE_URL=<srv.BaseURL("bash")>
//
// answers with a run_shell_command call running `echo hi`, then with text
// once its result comes back. Scenarios are stateless functions of the
// request's conversation, so CLI retries do not shift a script out of step.
package geminitest

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
	Path     string // without the scenario prefix, e.g. /v1beta/models/m:streamGenerateContent
	Scenario string // the scenario prefix ("" when none)
	Header   http.Header
	Body     []byte

	// Decoded from a models request; zero otherwise.
	Model    string // from the path
	Action   string // "streamGenerateContent", "generateContent", "countTokens"
	System   json.RawMessage
	Tools    json.RawMessage
	Schema   json.RawMessage // generationConfig.responseJsonSchema, when set
	Contents []Content
}

// Content is one turn of a request's conversation.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one part of a content: text, a function call or a function
// response.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a model's tool call.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// FunctionResponse is a tool's result as the CLI sends it back.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Output is a function response's output as text: response.output, else
// response.error, else the raw response.
func (f FunctionResponse) Output() string {
	var v struct {
		Output string `json:"output"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(f.Response, &v) == nil {
		if v.Output != "" {
			return v.Output
		}
		if v.Error != "" {
			return v.Error
		}
	}
	return string(f.Response)
}

// Text is the content's text parts (thoughts left out) joined by newlines.
func (c Content) Text() string {
	var out []string
	for _, p := range c.Parts {
		if p.Text != "" && !p.Thought {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// Responder chooses the answer to one generate request. It is called from
// the server's handler goroutines, possibly concurrently.
type Responder func(r *Request) Reply

// Server is a running fake Gemini API; it is closed when the test ends.
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
// selects with BaseURL(name). A name is one path segment other than "v1beta".
func (s *Server) Handle(name string, r Responder) {
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, "v1") {
		panic("geminitest: a scenario name is one path segment other than v1beta")
	}
	s.book.Set(name, r)
}

// BaseURL is the GOOGLE_GEMINI_BASE_URL that selects scenario name.
func (s *Server) BaseURL(name string) string { return s.URL + "/" + name }

// StreamRequests returns the streamGenerateContent requests of scenario,
// in arrival order: the main model calls the CLI made (the router's
// generateContent calls are left out).
func (s *Server) StreamRequests(scenario string) []*Request {
	return s.book.Requests(func(r *Request) bool {
		return r.Scenario == scenario && r.Action == "streamGenerateContent"
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
		if seg != "" && !strings.HasPrefix(seg, "v1") {
			req.Scenario, req.Path = seg, "/"+tail
		}
	}
	if m, ok := strings.CutPrefix(req.Path, "/v1beta/models/"); ok && req.Method == http.MethodPost {
		req.Model, req.Action, _ = strings.Cut(m, ":")
	}
	respond, known := s.book.Take(req, req.Scenario)

	switch req.Action {
	case "countTokens":
		writeJSON(w, http.StatusOK, map[string]int{"totalTokens": len(body)/4 + 1})
		return
	case "streamGenerateContent", "generateContent":
	default:
		s.book.Miss(req.Method + " " + hr.URL.Path)
		writeAPIError(w, http.StatusNotFound, "geminitest: no such endpoint")
		return
	}
	if err := req.decode(); err != nil {
		s.t.Logf("geminitest: bad request: %v", err)
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !known {
		s.t.Logf("geminitest: unknown scenario %q (known: %v)", req.Scenario, s.book.Names())
		writeAPIError(w, http.StatusNotFound, "geminitest: unknown scenario "+req.Scenario)
		return
	}
	if req.Action == "generateContent" && len(req.Schema) > 0 {
		// The CLI's own side request (its model router): a verdict of the
		// asked shape, outside the scenario.
		writeJSON(w, http.StatusOK, response(req, Reply{Parts: []Part{{Text: string(fill(req.Schema))}}}, true))
		return
	}
	reply := respond(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeAPIError(w, reply.Status, reply.ErrorMessage)
		return
	}
	if req.Action == "generateContent" {
		writeJSON(w, http.StatusOK, response(req, reply, true))
		return
	}
	writeStream(w, req, reply)
}

// decode fills the request's fields from Body.
func (r *Request) decode() error {
	var b struct {
		Contents          []Content       `json:"contents"`
		SystemInstruction json.RawMessage `json:"systemInstruction"`
		Tools             json.RawMessage `json:"tools"`
		GenerationConfig  struct {
			Schema json.RawMessage `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if err := json.NewDecoder(bytes.NewReader(r.Body)).Decode(&b); err != nil {
		return fmt.Errorf("decode %s request: %w", r.Action, err)
	}
	r.Contents, r.System, r.Tools, r.Schema = b.Contents, b.SystemInstruction, b.Tools, b.GenerationConfig.Schema
	return nil
}

// fill returns a JSON value of the given (OpenAPI-style) schema: objects
// with every property, strings "fake", numbers 1, booleans false.
func fill(schema json.RawMessage) json.RawMessage {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
		Enum       []string                   `json:"enum"`
	}
	_ = json.Unmarshal(schema, &s)
	switch strings.ToLower(s.Type) {
	case "object":
		obj := map[string]json.RawMessage{}
		for k, v := range s.Properties {
			obj[k] = fill(v)
		}
		out, _ := json.Marshal(obj)
		return out
	case "array":
		return json.RawMessage(`[]`)
	case "integer", "number":
		return json.RawMessage(`1`)
	case "boolean":
		return json.RawMessage(`false`)
	}
	if len(s.Enum) > 0 {
		out, _ := json.Marshal(s.Enum[0])
		return out
	}
	return json.RawMessage(`"fake"`)
}

// LastUser is the text of the last text part of the request's last user
// content that has text: the prompt (the CLI sends its session context as
// an earlier part), or "" when there is none.
func (r *Request) LastUser() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role != "user" {
			continue
		}
		for j := len(c.Parts) - 1; j >= 0; j-- {
			if p := c.Parts[j]; p.Text != "" && !p.Thought {
				return p.Text
			}
		}
	}
	return ""
}

// Transcript returns "role: text" for each content with text, in order:
// the conversation as the model sees it.
func (r *Request) Transcript() []string {
	var out []string
	for _, c := range r.Contents {
		if t := c.Text(); t != "" {
			out = append(out, c.Role+": "+t)
		}
	}
	return out
}

// Results returns the function responses of the last content: the answers
// to the model's previous calls.
func (r *Request) Results() []FunctionResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	var out []FunctionResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}

// Step counts the model's contents with function calls since the last user
// text: 0 for the first model call of a prompt, 1 after one round of tools.
func (r *Request) Step() int {
	n := 0
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role == "user" && c.Text() != "" {
			break
		}
		if c.Role == "model" {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					n++
					break
				}
			}
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeAPIError answers as the Gemini API does on failure, e.g. 429
// {"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED"}}.
func writeAPIError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	statuses := map[int]string{400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": statuses[status]}})
}
