package parser

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCodexRules(t *testing.T) {
	const (
		started  = `{"type":"thread.started","thread_id":"t-1"}`
		turn     = `{"type":"turn.started"}`
		complete = `{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":100,"output_tokens":7,"reasoning_output_tokens":2}}`
		doneJSON = `{"type":"done","session_id":"t-1","input_tokens":120,"output_tokens":7}`
	)
	runRules(t, NewCodex, []ruleCase{
		{name: "text and done with usage", lines: []string{started, turn,
			`{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"thinking"}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Hi."}}`,
			`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Bye."}}`, complete},
			want: `{"type":"text","content":"Hi."}` + "\n" + `{"type":"text","content":"\n\nBye."}` + "\n" + doneJSON},
		{name: "done without usage", lines: []string{started, `{"type":"turn.completed"}`},
			want: `{"type":"done","session_id":"t-1"}`},
		{name: "failed command", lines: []string{
			`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"ls x","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls x","aggregated_output":"no x\n","exit_code":2,"status":"failed"}}`},
			want: `{"type":"tool_call","id":"item_1","name":"Shell","args":{"command":"ls x"}}` + "\n" +
				`{"type":"tool_result","id":"item_1","content":"no x\n","is_error":true}`},
		{name: "completed without started, mcp", lines: []string{
			`{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"go"},"result":{"content":[{"type":"text","text":"found"}],"structured_content":null},"error":null,"status":"completed"}}`},
			want: `{"type":"tool_call","id":"item_3","name":"docs/search","args":{"q":"go"}}` + "\n" +
				`{"type":"tool_result","id":"item_3","content":"found","is_error":false}`},
		{name: "mcp error", lines: []string{
			`{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"result":null,"error":{"message":"server gone"},"status":"failed"}}`},
			want: `{"type":"tool_call","id":"item_3","name":"docs/search","args":{}}` + "\n" +
				`{"type":"tool_result","id":"item_3","content":"server gone","is_error":true}`},
		{name: "web search", lines: []string{`{"type":"item.completed","item":{"id":"item_4","type":"web_search","query":"golang bbolt"}}`},
			want: `{"type":"tool_call","id":"item_4","name":"WebSearch","args":{"query":"golang bbolt"}}` + "\n" +
				`{"type":"tool_result","id":"item_4","content":"golang bbolt","is_error":false}`},
		{name: "file change", lines: []string{
			`{"type":"item.completed","item":{"id":"item_5","type":"file_change","changes":[{"path":"/w/a.go","kind":"update"},{"path":"/w/b.go","kind":"delete"}],"status":"completed"}}`},
			want: `{"type":"tool_call","id":"item_5","name":"Edit","args":{"path":"/w/a.go","changes":[{"path":"/w/a.go","kind":"update"},{"path":"/w/b.go","kind":"delete"}]}}` + "\n" +
				`{"type":"tool_result","id":"item_5","content":"update /w/a.go\ndelete /w/b.go","is_error":false}`},
		{name: "todo list and unknown items are dropped", lines: []string{
			`{"type":"item.started","item":{"id":"item_6","type":"todo_list","items":[{"text":"a","completed":false}]}}`,
			`{"type":"item.completed","item":{"id":"item_6","type":"todo_list","items":[{"text":"a","completed":true}]}}`,
			`{"type":"item.completed","item":{"id":"item_7","type":"something_new"}}`}},
		{name: "error item is a warning", lines: []string{`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for x not found."}}`},
			want: `{"type":"warning","message":"Model metadata for x not found."}`},
		{name: "reconnecting is a warning, then done", lines: []string{started, turn,
			`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: reset)"}`, complete},
			want: `{"type":"warning","message":"the model API failed (stream disconnected before completion: reset); retrying, attempt 1 of 5"}` + "\n" + doneJSON},
		{name: "error then turn.failed: one error", lines: []string{started, turn,
			`{"type":"error","message":"{\"error\":{\"code\":null,\"message\":\"bad model\",\"type\":\"invalid_request_error\"}}\n"}`,
			`{"type":"turn.failed","error":{"message":"{\"error\":{\"code\":null,\"message\":\"bad model\",\"type\":\"invalid_request_error\"}}\n"}}`},
			want: `{"type":"error","message":"bad model"}`},
		{name: "an error not followed by turn.failed is a warning", lines: []string{started,
			`{"type":"error","message":"hook failed"}`, complete},
			want: `{"type":"warning","message":"hook failed"}` + "\n" + doneJSON},
		{name: "turn.failed without a message", lines: []string{`{"type":"error","message":"boom"}`, `{"type":"turn.failed","error":{}}`},
			want: `{"type":"error","message":"boom"}`},
		{name: "turn.failed alone", lines: []string{`{"type":"turn.failed"}`},
			want: `{"type":"error","message":"codex reported a failed turn"}`},
		{name: "noise", lines: []string{"", "not json", `{"type":"item.completed","item":7}`, `[1]`, `{"type":`}},
	})
}

func TestCodexResumeOtherThread(t *testing.T) {
	got := parseLines(t, NewCodexResume("my-old-thread"), `{"type":"thread.started","thread_id":"t-2"}`, `{"type":"turn.completed"}`)
	want := `{"type":"warning","message":"could not resume session my-old-thread; codex started a new one"}` + "\n" + `{"type":"done","session_id":"t-2"}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	p := NewCodexResume("t-2")
	if evs := p.Parse([]byte(`{"type":"thread.started","thread_id":"t-2"}`)); len(evs) != 0 {
		t.Errorf("resuming the same thread gave %+v", evs)
	}
	ev := NewCodexResume("x").Parse([]byte(`{"type":"thread.started","thread_id":"t-3"}`))
	if len(ev) != 1 || !ev[0].SessionReset {
		t.Errorf("the warning does not reset the session: %+v", ev)
	}
}

// codexRecorded states what a user must see for each fixture recorded from
// the real CLI (see engine/openaitest's TestRecord), whatever the golden
// file says.
var codexRecorded = map[string]recordedRun{
	"text":        {text: "Hello from the fake model. This answer streams in several pieces."},
	"model":       {text: "Hello from the fake model. This answer streams in several pieces.", warnings: 1},
	"bash":        {text: "The command printed: hi", tools: []string{"Shell"}},
	"write":       {text: "Wrote note.txt.", tools: []string{"Edit"}},
	"tools":       {text: "Let me look around first.\n\nLooked, failed once, wrote the note.", tools: []string{"Shell", "Shell", "Edit"}, toolErrors: 1},
	"error":       {errorIs: "The model `fake` does not exist (openaitest)."},
	"failed":      {errorIs: "stream disconnected before completion: the fake model failed mid-stream (openaitest)", warnings: 1},
	"overloaded":  {errorIs: "We’re currently experiencing high demand, which may cause temporary errors.", warnings: 2},
	"resume":      {text: "Hello from the fake model. This answer streams in several pieces."},
	"resume-name": {text: "Hello from the fake model. This answer streams in several pieces."},
}

func TestCodexRecorded(t *testing.T) { checkRecorded(t, "codex", NewCodex, codexRecorded) }

// recordedRun is what a user must see of one recorded run.
type recordedRun struct {
	text       string   // all text events joined
	tools      []string // tool_call names in order
	toolErrors int      // tool results that are errors
	errorIs    string   // the run's error; "" for a run that ends with done
	warnings   int
}

// checkRecorded checks every testdata/DIR/recorded-*.ndjson against its
// expectations (what the user sees; a done carries a session id and token
// usage) and its golden file (rewritten with -update).
func checkRecorded(t *testing.T, dir string, newParser func() Parser, want map[string]recordedRun) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "recorded-*.ndjson"))
	seen := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.ndjson") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "recorded-"), ".ndjson")
		w, ok := want[name]
		if !ok {
			t.Errorf("no expectations for %s", file)
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			var tools []string
			warnings, toolErrors := 0, 0
			var last Event
			g := NewGuard(newParser())
			var events []Event
			ReadLines(bytes.NewReader(raw), func(line []byte) { events = append(events, g.Parse(line)...) })
			if e, ok := g.End(true, "end of the recorded output"); ok {
				events = append(events, e)
			}
			{
				for _, e := range events {
					switch e.Type {
					case Text:
						text.WriteString(e.Content)
					case ToolCall:
						tools = append(tools, e.Name)
					case ToolResult:
						if e.IsError {
							toolErrors++
						}
					case Warning:
						warnings++
					}
					last = e
				}
			}
			if text.String() != w.text || strings.Join(tools, ",") != strings.Join(w.tools, ",") || warnings != w.warnings || toolErrors != w.toolErrors {
				t.Errorf("text %q tools %v (%d errors) warnings %d; want %q %v (%d) %d", text.String(), tools, toolErrors, warnings, w.text, w.tools, w.toolErrors, w.warnings)
			}
			switch {
			case w.errorIs == "" && (last.Type != Done || last.SessionID == "" || last.Stats == nil || last.Stats.InputTokens == nil || last.Stats.OutputTokens == nil):
				t.Errorf("the run ends with %+v, want done with the session id and usage", last)
			case w.errorIs != "" && (last.Type != Error || last.Message != w.errorIs):
				t.Errorf("the run ends with %+v, want the error %q", last, w.errorIs)
			}
			got := normalize(t, newParser, raw)
			golden := strings.TrimSuffix(file, ".ndjson") + ".golden.ndjson"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if wantGolden, err := os.ReadFile(golden); err != nil || !bytes.Equal(got, wantGolden) {
				t.Errorf("events of %s differ from %s (%v)\ngot:\n%s\nwant:\n%s", file, golden, err, got, wantGolden)
			}
		})
	}
	if seen != len(want) {
		t.Errorf("%d recorded fixtures in testdata/%s, want %d", seen, dir, len(want))
	}
}
