package anthropictest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// post sends a messages request to the fake as the CLI does.
func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/messages?beta=true", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type sse struct {
	event string
	data  map[string]any
}

func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var out []sse
	sc := bufio.NewScanner(r)
	var cur sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			if cur.data["type"] != cur.event {
				t.Errorf("event %q carries data of type %v", cur.event, cur.data["type"])
			}
		case line == "":
			out = append(out, cur)
			cur = sse{}
		}
	}
	return out
}

// assembled rebuilds the content blocks of a stream the way a client does.
func assembled(events []sse) (blocks []map[string]any, stop string) {
	for _, e := range events {
		switch e.event {
		case "content_block_start":
			blocks = append(blocks, e.data["content_block"].(map[string]any))
		case "content_block_delta":
			b := blocks[int(e.data["index"].(float64))]
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + d["text"].(string)
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + d["thinking"].(string)
			case "signature_delta":
				b["signature"] = d["signature"]
			case "input_json_delta":
				s, _ := b["partial"].(string)
				b["partial"] = s + d["partial_json"].(string)
			}
		case "message_delta":
			stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	return blocks, stop
}

func TestStreamingScenarios(t *testing.T) {
	srv := NewServer(t)
	const firstCall = `{"model":"m","stream":true,"system":[{"type":"text","text":"Primary working directory: /tmp/wd\n"}],"messages":[{"role":"user","content":"hi"}]}`
	afterBash := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_bash_1","name":"Bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_bash_1","content":[{"type":"text","text":"hi\n"}]}]}]}`
	tests := []struct {
		scenario, body string
		wantTypes      []string
		wantText       string
		wantStop       string
	}{
		{ScenarioText, firstCall, []string{"text"}, TextAnswer, "end_turn"},
		{ScenarioThinking, firstCall, []string{"thinking", "text"}, ThinkingAnswer, "end_turn"},
		{ScenarioBash, firstCall, []string{"tool_use"}, "", "tool_use"},
		{ScenarioBash, afterBash, []string{"text"}, BashAnswer, "end_turn"},
		{ScenarioTools, firstCall, []string{"text", "tool_use", "tool_use"}, "Let me run a command and write a note.", "tool_use"},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			resp := post(t, srv.BaseURL(tc.scenario), tc.body)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			events := readSSE(t, resp.Body)
			if first, last := events[0].event, events[len(events)-1].event; first != "message_start" || last != "message_stop" {
				t.Errorf("stream runs from %s to %s", first, last)
			}
			blocks, stop := assembled(events)
			var types []string
			var text string
			for _, b := range blocks {
				types = append(types, b["type"].(string))
				if b["type"] == "text" {
					text = b["text"].(string)
				}
				if b["type"] == "tool_use" && !json.Valid([]byte(b["partial"].(string))) {
					t.Errorf("tool input deltas do not make JSON: %q", b["partial"])
				}
			}
			if !reflect.DeepEqual(types, tc.wantTypes) || text != tc.wantText || stop != tc.wantStop {
				t.Errorf("blocks %v, text %q, stop %q; want %v, %q, %q", types, text, stop, tc.wantTypes, tc.wantText, tc.wantStop)
			}
		})
	}
	reqs := srv.MessageRequests(ScenarioTools)
	if len(reqs) != 1 || reqs[0].Workdir() != "/tmp/wd" || !reqs[0].Stream || reqs[0].Messages[0].Text() != "hi" {
		t.Errorf("recorded tools request: %+v", reqs)
	}
	if got := srv.MessageRequests(ScenarioBash)[1].ToolResults(); len(got) != 1 || got[0].ResultText() != "hi\n" {
		t.Errorf("tool results of the second bash request: %+v", got)
	}
}

func TestNonStreamingAnswer(t *testing.T) {
	srv := NewServer(t)
	resp := post(t, srv.BaseURL(ScenarioText), `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != TextAnswer || msg.StopReason != "end_turn" {
		t.Errorf("answer %+v", msg)
	}
}

func TestErrors(t *testing.T) {
	srv := NewServer(t)
	srv.Handle("custom", func(*Request) Reply {
		return Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "prompt is too long"}
	})
	tests := []struct {
		name, url       string
		wantStatus      int
		wantType, wantM string
	}{
		{"overloaded", srv.BaseURL(ScenarioOverloaded), 529, "overloaded_error", "Overloaded"},
		{"custom", srv.BaseURL("custom"), 400, "invalid_request_error", "prompt is too long"},
		{"unknown scenario", srv.BaseURL("nope"), 404, "not_found_error", "anthropictest: unknown scenario nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, tc.url, `{"stream":true,"messages":[]}`)
			var body struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus || body.Type != "error" || body.Error.Type != tc.wantType || body.Error.Message != tc.wantM {
				t.Errorf("got %d %+v", resp.StatusCode, body)
			}
		})
	}

	resp, err := http.Get(srv.URL + "/v1/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !reflect.DeepEqual(srv.Unexpected(), []string{"GET /v1/elsewhere"}) {
		t.Errorf("unknown path: status %d, unexpected %v", resp.StatusCode, srv.Unexpected())
	}
}

func TestStep(t *testing.T) {
	user := Message{Role: "user", Content: []ContentBlock{{Type: "text", Text: "do it"}}}
	asst := Message{Role: "assistant", Content: []ContentBlock{{Type: "tool_use", ID: "a"}}}
	results := Message{Role: "user", Content: []ContentBlock{{Type: "tool_result", ToolUseID: "a"}, {Type: "text", Text: "<system-reminder>"}}}
	system := Message{Role: "system", Content: []ContentBlock{{Type: "text", Text: "agents"}}}
	tests := []struct {
		name string
		msgs []Message
		want int
	}{
		{"first call", []Message{user}, 0},
		{"system message after the prompt", []Message{user, system}, 0},
		{"after one tool round", []Message{user, system, asst, results}, 1},
		{"after two rounds", []Message{user, asst, results, asst, results}, 2},
		{"a resumed session's new prompt", []Message{user, asst, results, {Role: "assistant"}, user}, 0},
	}
	for _, tc := range tests {
		if got := (&Request{Messages: tc.msgs}).Step(); got != tc.want {
			t.Errorf("%s: Step() = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestScriptAndRoot(t *testing.T) {
	srv := NewServer(t)
	srv.Handle("flaky", Script(Overloaded(), Text("second"), Text("third")))
	var got []string
	for range 4 {
		resp := post(t, srv.BaseURL("flaky"), `{"messages":[]}`)
		var msg struct {
			Content []struct{ Text string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&msg)
		if resp.StatusCode != 200 {
			got = append(got, fmt.Sprint(resp.StatusCode))
			continue
		}
		got = append(got, msg.Content[0].Text)
	}
	if want := []string{"529", "second", "third", "third"}; !reflect.DeepEqual(got, want) {
		t.Errorf("script answers %q, want %q", got, want)
	}

	resp := post(t, srv.URL, `{"messages":[]}`)
	if resp.StatusCode != 200 || len(srv.MessageRequests("")) != 1 {
		t.Errorf("the root answered %d (requests %d), want the text scenario", resp.StatusCode, len(srv.MessageRequests("")))
	}
}
