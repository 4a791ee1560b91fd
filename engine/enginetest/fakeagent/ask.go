package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// stdin is read line by line with --input-format stream-json: the prompt
// first, then (by readInput) the answers to control requests and the user
// messages steered into the run.
var stdin = bufio.NewReaderSize(os.Stdin, 1<<20)

// readLine returns the next stdin line without its newline.
func readLine() ([]byte, error) {
	line, err := stdin.ReadBytes('\n')
	if len(line) > 0 && err == io.EOF {
		err = nil
	}
	return []byte(strings.TrimRight(string(line), "\n")), err
}

// userContent returns the text of a stream-json user message line.
func userContent(line []byte) (string, bool) {
	var m struct {
		Type    string `json:"type"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Type != "user" || m.Message.Role != "user" {
		return "", false
	}
	return m.Message.Content, true
}

// readPrompt reads the stream-json user message that carries the prompt.
func readPrompt() string {
	line, err := readLine()
	if err != nil {
		fail(1, "fake agent: no user message on stdin: "+err.Error())
	}
	text, ok := userContent(line)
	if !ok {
		fail(1, fmt.Sprintf("fake agent: the first stdin line is not a user message: %.200s", line))
	}
	return text
}

// input is what arrives on stdin after the prompt, read by one goroutine
// (readInput): control responses, user messages steered into the run,
// and the end of input.
type input struct {
	answers chan []byte   // control_response lines
	eof     chan struct{} // closed at the end of stdin
	mu      sync.Mutex
	queued  []string      // user messages not taken in yet
	count   int           // user messages that arrived after the prompt
	arrived chan struct{} // capacity 1: a user message was queued
}

func readInput() *input {
	in := &input{answers: make(chan []byte, 64), eof: make(chan struct{}), arrived: make(chan struct{}, 1)}
	go func() {
		defer close(in.eof)
		for {
			line, err := readLine()
			if err != nil {
				return
			}
			if text, ok := userContent(line); ok {
				in.mu.Lock()
				in.queued = append(in.queued, text)
				in.count++
				in.mu.Unlock()
				select {
				case in.arrived <- struct{}{}:
				default:
				}
				continue
			}
			in.answers <- line
		}
	}()
	return in
}

// take returns the user messages queued so far and forgets them.
func (in *input) take() []string {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	q := in.queued
	in.queued = nil
	return q
}

// arrivals is the number of user messages that arrived after the prompt.
func (in *input) arrivals() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.count
}

// wait waits until a user message is queued or more than n have arrived
// after the prompt, or stdin ends; it reports whether one of the first two
// came true.
func (in *input) wait(n int) bool {
	for {
		if in.pending() || in.arrivals() > n {
			return true
		}
		select {
		case <-in.arrived:
		case <-in.eof:
			return in.pending() || in.arrivals() > n
		}
	}
}

// pending reports whether user messages wait to be taken in.
func (in *input) pending() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.queued) > 0
}

// ask writes a tool use ("Name {json args}") that needs permission, as
// Claude Code does with --permission-prompt-tool stdio: a control_request
// line, then it waits on stdin for the control_response. Allowed, the
// result is "fake output of NAME" (plus "; answers: {...}" when the answer
// carried AskUserQuestion answers); denied, an error result with the
// message. Without the stdio prompt tool, with --dangerously-skip-
// permissions, after an allow that carried updatedPermissions, and for
// Write and Edit in acceptEdits mode, it runs without asking.
func (a *agent) ask(arg string) {
	name, raw, _ := strings.Cut(arg, " ")
	if a.cursor || a.o.skipPerms || a.o.permTool != "stdio" || a.sessionAllowed ||
		(a.o.permMode == "acceptEdits" && (name == "Write" || name == "Edit")) {
		a.tool(arg)
		return
	}
	input := json.RawMessage(strings.TrimSpace(raw))
	if !json.Valid(input) {
		input = json.RawMessage(`{}`)
	}
	a.turns++
	id := a.nextID("toolu_")
	a.emit(a.assistant(a.nextID("msg_"), obj{"type": "tool_use", "id": id, "name": name, "input": input}))
	reqID := a.nextID("req-")
	a.emit(obj{"type": "control_request", "request_id": reqID, "request": obj{
		"subtype": "can_use_tool", "tool_name": name, "input": input, "tool_use_id": id,
		"permission_suggestions": []obj{{"type": "setMode", "mode": "acceptEdits", "destination": "session"}}}})
	content, isErr := a.awaitAnswer(reqID)
	a.emit(obj{"type": "user", "message": obj{"role": "user", "content": []obj{{
		"tool_use_id": id, "type": "tool_result", "content": strings.ReplaceAll(content, "NAME", name), "is_error": isErr}}},
		"session_id": a.session})
}

// awaitAnswer reads stdin until the control_response for reqID and returns
// the tool result it leads to.
func (a *agent) awaitAnswer(reqID string) (content string, isErr bool) {
	for {
		var line []byte
		select {
		case line = <-a.in.answers:
		case <-a.in.eof:
			select {
			case line = <-a.in.answers:
			default:
				return "Tool permission stream closed before response received", true
			}
		}
		var m struct {
			Type     string `json:"type"`
			Response struct {
				Subtype   string `json:"subtype"`
				RequestID string `json:"request_id"`
				Response  struct {
					Behavior           string          `json:"behavior"`
					Message            string          `json:"message"`
					UpdatedInput       json.RawMessage `json:"updatedInput"`
					UpdatedPermissions json.RawMessage `json:"updatedPermissions"`
				} `json:"response"`
			} `json:"response"`
		}
		if json.Unmarshal(line, &m) != nil || m.Type != "control_response" || m.Response.RequestID != reqID {
			continue // an answer to something else
		}
		r := m.Response.Response
		switch r.Behavior {
		case "allow":
			if len(r.UpdatedPermissions) > 0 && string(r.UpdatedPermissions) != "null" {
				a.sessionAllowed = true
			}
			content = "fake output of NAME"
			var in struct {
				Answers json.RawMessage `json:"answers"`
			}
			if json.Unmarshal(r.UpdatedInput, &in) == nil && len(in.Answers) > 0 {
				content += "; answers: " + string(in.Answers)
			}
			return content, false
		case "deny":
			return "denied: " + r.Message, true
		default:
			return fmt.Sprintf("fake agent: bad control_response behavior %q", r.Behavior), true
		}
	}
}
