package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// Reply is the fake model's answer to one messages request: either content
// blocks (streamed as server-sent events when the request asks for a
// stream) or an API error when Status is set.
type Reply struct {
	Blocks []Block
	// StopReason defaults to "tool_use" when a block is a tool use and to
	// "end_turn" otherwise.
	StopReason string

	// Status, when not 0 or 200, makes the reply an API error with the
	// Messages API's JSON body, e.g. 529 and "overloaded_error".
	Status       int
	ErrorType    string
	ErrorMessage string
}

// Block is one content block of a reply. Build it with TextBlock,
// ThinkingBlock or ToolUse.
type Block struct {
	Type      string // "text", "thinking" or "tool_use"
	Text      string // text, or a thinking block's thinking
	Signature string // a thinking block's signature
	ID        string // a tool use's id
	Name      string // a tool use's tool name
	Input     any    // a tool use's input, marshalled to JSON
}

// TextBlock is a text block; it streams as several text deltas.
func TextBlock(text string) Block { return Block{Type: "text", Text: text} }

// ThinkingBlock is an extended-thinking block with a fake signature.
func ThinkingBlock(thinking string) Block {
	return Block{Type: "thinking", Text: thinking, Signature: "ZmFrZS1zaWduYXR1cmU="}
}

// ToolUse is a tool_use block with the given id (e.g. "toolu_bash_1").
func ToolUse(id, name string, input any) Block {
	return Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

// Text is a reply of one text block.
func Text(text string) Reply { return Reply{Blocks: []Block{TextBlock(text)}} }

// Script answers the model calls of a scenario with replies in order, one
// per call, repeating the last one when the calls outnumber them. Unlike
// the built-in scenarios it counts calls, so a CLI retry moves it on.
func Script(replies ...Reply) Responder {
	if len(replies) == 0 {
		panic("anthropictest: a script needs at least one reply")
	}
	var calls atomic.Int64
	return func(*Request) Reply {
		i := int(calls.Add(1)) - 1
		return replies[min(i, len(replies)-1)]
	}
}

// Overloaded is the API's 529 overloaded error.
func Overloaded() Reply {
	return Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
}

func (r Reply) stopReason() string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, b := range r.Blocks {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

var messageSeq atomic.Int64

// usage is the token usage the fake reports; the CLI derives its cost from
// it, so a run's cost is non-zero.
func usage(req *Request, output int) map[string]int {
	return map[string]int{
		"input_tokens":                len(req.Body)/4 + 1,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
		"output_tokens":               output,
	}
}

func model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return "claude-sonnet-4-5"
}

// blockJSON is a block as it appears in a whole (non-streamed) message.
func blockJSON(b Block) map[string]any {
	switch b.Type {
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": b.Text, "signature": b.Signature}
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": inputJSON(b)}
	default:
		return map[string]any{"type": "text", "text": b.Text}
	}
}

func inputJSON(b Block) json.RawMessage {
	if b.Input == nil {
		return json.RawMessage(`{}`)
	}
	if raw, ok := b.Input.(json.RawMessage); ok {
		return raw
	}
	data, err := json.Marshal(b.Input)
	if err != nil {
		panic(fmt.Sprintf("anthropictest: tool input of %s: %v", b.Name, err))
	}
	return data
}

func outputTokens(r Reply) int {
	n := 1
	for _, b := range r.Blocks {
		n += (len(b.Text) + len(inputJSON(b))) / 4
	}
	return n
}

// messageJSON is the non-streaming answer.
func messageJSON(req *Request, r Reply) map[string]any {
	content := make([]map[string]any, 0, len(r.Blocks))
	for _, b := range r.Blocks {
		content = append(content, blockJSON(b))
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_fake%04d", messageSeq.Add(1)),
		"type":          "message",
		"role":          "assistant",
		"model":         model(req),
		"content":       content,
		"stop_reason":   r.stopReason(),
		"stop_sequence": nil,
		"usage":         usage(req, outputTokens(r)),
	}
}

// writeStream answers with the Messages API's server-sent events.
func writeStream(w http.ResponseWriter, req *Request, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_anthropictest")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		payload, err := json.Marshal(data)
		if err != nil {
			panic(fmt.Sprintf("anthropictest: marshal %s: %v", event, err))
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, payload)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": fmt.Sprintf("msg_fake%04d", messageSeq.Add(1)), "type": "message", "role": "assistant",
			"model": model(req), "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": usage(req, 1),
		},
	})
	send("ping", map[string]any{"type": "ping"})
	for i, b := range r.Blocks {
		start := blockJSON(b)
		var deltas []map[string]any
		switch b.Type {
		case "thinking":
			start["thinking"], start["signature"] = "", ""
			for _, piece := range clitest.Chunks(b.Text) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": piece})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": b.Signature})
		case "tool_use":
			start["input"] = map[string]any{}
			for _, piece := range clitest.Chunks(string(inputJSON(b))) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": piece})
			}
		default:
			start["text"] = ""
			for _, piece := range clitest.Chunks(b.Text) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": piece})
			}
		}
		send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		for _, d := range deltas {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": outputTokens(r)},
	})
	send("message_stop", map[string]any{"type": "message_stop"})
}
