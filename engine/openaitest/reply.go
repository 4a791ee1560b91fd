package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// Reply is the fake model's answer to one responses request: output items
// streamed as server-sent events, or an API error when Status is set, or a
// stream that ends in response.failed when Failed is set.
type Reply struct {
	Items []Output

	// Status, when not 0 or 200, makes the reply an HTTP API error with the
	// API's JSON body, e.g. 400 and "invalid_request_error".
	Status       int
	ErrorType    string
	ErrorMessage string

	// Failed, when set, ends the stream with response.failed carrying this
	// message (code "server_error") instead of response.completed.
	Failed string
}

// Output is one output item of a reply. Build it with MessageItem,
// FunctionCall or Reasoning.
type Output struct {
	Type   string // "message", "function_call" or "reasoning"
	Text   string // a message's text, or a reasoning summary
	CallID string // a function call's call_id
	Name   string // a function call's tool name
	Args   any    // a function call's arguments, marshalled to JSON
}

// MessageItem is an assistant message; its text streams as several deltas.
func MessageItem(text string) Output { return Output{Type: "message", Text: text} }

// FunctionCall is a call of function tool name (e.g. "exec_command").
func FunctionCall(callID, name string, args any) Output {
	return Output{Type: "function_call", CallID: callID, Name: name, Args: args}
}

// Reasoning is a reasoning item with a summary, which is not answer text.
func Reasoning(summary string) Output { return Output{Type: "reasoning", Text: summary} }

// Text is a reply of one assistant message.
func Text(text string) Reply { return Reply{Items: []Output{MessageItem(text)}} }

var seq atomic.Int64

func (o Output) arguments() string {
	if o.Args == nil {
		return "{}"
	}
	if s, ok := o.Args.(string); ok {
		return s
	}
	data, err := json.Marshal(o.Args)
	if err != nil {
		panic(fmt.Sprintf("openaitest: arguments of %s: %v", o.Name, err))
	}
	return string(data)
}

// usage is the token usage the fake reports: input from the request size,
// output from the reply's.
func usage(req *Request, r Reply) map[string]any {
	in := len(req.Body)/4 + 1
	out := 1
	for _, o := range r.Items {
		out += (len(o.Text) + len(o.arguments())) / 4
	}
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]int{"cached_tokens": 0},
		"output_tokens":         out,
		"output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens":          in + out,
	}
}

// writeStream answers with the Responses API's server-sent events.
func writeStream(w http.ResponseWriter, req *Request, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("x-request-id", "req_openaitest")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	n := 0
	send := func(data map[string]any) {
		data["sequence_number"] = n
		n++
		payload, err := json.Marshal(data)
		if err != nil {
			panic(fmt.Sprintf("openaitest: marshal %s: %v", data["type"], err))
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], payload)
		if flusher != nil {
			flusher.Flush()
		}
	}
	id := fmt.Sprintf("resp_fake%04d", seq.Add(1))
	model := req.Model
	response := func(status string, output []any) map[string]any {
		return map[string]any{"id": id, "object": "response", "status": status, "model": model, "output": output}
	}
	send(map[string]any{"type": "response.created", "response": response("in_progress", []any{})})
	var output []any
	for i, o := range r.Items {
		itemID := fmt.Sprintf("%s_fake%04d", map[string]string{"message": "msg", "function_call": "fc", "reasoning": "rs"}[o.Type], seq.Add(1))
		var done map[string]any
		switch o.Type {
		case "message":
			send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": map[string]any{
				"id": itemID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
			send(map[string]any{"type": "response.content_part.added", "item_id": itemID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, piece := range clitest.Chunks(o.Text) {
				send(map[string]any{"type": "response.output_text.delta", "item_id": itemID, "output_index": i, "content_index": 0, "delta": piece})
			}
			part := map[string]any{"type": "output_text", "text": o.Text, "annotations": []any{}}
			send(map[string]any{"type": "response.output_text.done", "item_id": itemID, "output_index": i, "content_index": 0, "text": o.Text})
			send(map[string]any{"type": "response.content_part.done", "item_id": itemID, "output_index": i, "content_index": 0, "part": part})
			done = map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "completed", "content": []any{part}}
		case "function_call":
			args := o.arguments()
			send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": map[string]any{
				"id": itemID, "type": "function_call", "status": "in_progress", "name": o.Name, "call_id": o.CallID, "arguments": ""}})
			for _, piece := range clitest.Chunks(args) {
				send(map[string]any{"type": "response.function_call_arguments.delta", "item_id": itemID, "output_index": i, "delta": piece})
			}
			send(map[string]any{"type": "response.function_call_arguments.done", "item_id": itemID, "output_index": i, "arguments": args})
			done = map[string]any{"id": itemID, "type": "function_call", "status": "completed", "name": o.Name, "call_id": o.CallID, "arguments": args}
		case "reasoning":
			send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": map[string]any{
				"id": itemID, "type": "reasoning", "summary": []any{}}})
			send(map[string]any{"type": "response.reasoning_summary_part.added", "item_id": itemID, "output_index": i, "summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": ""}})
			for _, piece := range clitest.Chunks(o.Text) {
				send(map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": itemID, "output_index": i, "summary_index": 0, "delta": piece})
			}
			done = map[string]any{"id": itemID, "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": o.Text}}}
		default:
			panic("openaitest: unknown output type " + o.Type)
		}
		send(map[string]any{"type": "response.output_item.done", "output_index": i, "item": done})
		output = append(output, done)
	}
	if r.Failed != "" {
		failed := response("failed", output)
		failed["error"] = map[string]any{"code": "server_error", "message": r.Failed}
		send(map[string]any{"type": "response.failed", "response": failed})
		return
	}
	completed := response("completed", output)
	completed["usage"] = usage(req, r)
	send(map[string]any{"type": "response.completed", "response": completed})
}
