package geminitest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// Reply is the fake model's answer to one generate request: parts (text
// streamed in several chunks, function calls whole), or an API error when
// Status is set.
type Reply struct {
	Parts []Part

	// Status, when not 0 or 200, makes the reply an API error, e.g. 429.
	Status       int
	ErrorMessage string
}

// Text is a reply of one text part.
func Text(text string) Reply { return Reply{Parts: []Part{{Text: text}}} }

// Call is a reply of one function call.
func Call(name string, args map[string]any) Reply {
	return Reply{Parts: []Part{{FunctionCall: &FunctionCall{Name: name, Args: args}}}}
}

// usage is the token usage the fake reports.
func usage(req *Request, r Reply) map[string]int {
	in, out := len(req.Body)/4+1, 1
	for _, p := range r.Parts {
		out += len(p.Text) / 4
		if p.FunctionCall != nil {
			b, _ := json.Marshal(p.FunctionCall.Args)
			out += len(b) / 4
		}
	}
	return map[string]int{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out}
}

func chunk(req *Request, parts []Part, last bool, r Reply) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	c := map[string]any{"candidates": []any{cand}, "modelVersion": req.Model, "responseId": "geminitest"}
	if last {
		cand["finishReason"] = "STOP"
		c["usageMetadata"] = usage(req, r)
	}
	return c
}

// response is the whole (non-streamed) answer.
func response(req *Request, r Reply, _ bool) map[string]any { return chunk(req, r.Parts, true, r) }

// writeStream answers with the API's server-sent events: each text part in
// pieces of a few words, each function call whole, the last chunk with the
// finish reason and the usage.
func writeStream(w http.ResponseWriter, req *Request, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var chunks [][]Part
	for _, p := range r.Parts {
		if p.Text == "" {
			chunks = append(chunks, []Part{p})
			continue
		}
		for _, piece := range clitest.Chunks(p.Text) {
			chunks = append(chunks, []Part{{Text: piece, Thought: p.Thought}})
		}
	}
	if len(chunks) == 0 {
		chunks = [][]Part{{{Text: ""}}}
	}
	for i, parts := range chunks {
		data, err := json.Marshal(chunk(req, parts, i == len(chunks)-1, r))
		if err != nil {
			panic(fmt.Sprintf("geminitest: marshal chunk: %v", err))
		}
		fmt.Fprintf(w, "data: %s\r\n\r\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
}
