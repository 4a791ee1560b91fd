package parser

import "testing"

func TestGeminiRules(t *testing.T) {
	const (
		initLine = `{"type":"init","timestamp":"2026-12-01T09:10:00.304Z","session_id":"s-1","model":"auto"}`
		result   = `{"type":"result","status":"success","stats":{"total_tokens":130,"input_tokens":120,"output_tokens":10,"cached":0,"duration_ms":568,"tool_calls":0}}`
		doneJSON = `{"type":"done","session_id":"s-1","duration_ms":568,"input_tokens":120,"output_tokens":10}`
	)
	runRules(t, NewGemini, []ruleCase{
		{name: "the echoed prompt is not answer text", lines: []string{initLine,
			`{"type":"message","role":"user","content":"say hi"}`,
			`{"type":"message","role":"assistant","content":"Hel","delta":true}`,
			`{"type":"message","role":"assistant","content":"lo.","delta":true}`, result},
			want: `{"type":"text","content":"Hel"}` + "\n" + `{"type":"text","content":"lo."}` + "\n" + doneJSON},
		{name: "a whole message after its deltas is skipped", lines: []string{
			`{"type":"message","role":"assistant","content":"Hi ","delta":true}`,
			`{"type":"message","role":"assistant","content":"there","delta":true}`,
			`{"type":"message","role":"assistant","content":"Hi there"}`,
			`{"type":"message","role":"assistant","content":"New."}`},
			want: `{"type":"text","content":"Hi "}` + "\n" + `{"type":"text","content":"there"}` + "\n" + `{"type":"text","content":"New."}`},
		{name: "tools", lines: []string{
			`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"ls"}}`,
			`{"type":"tool_result","tool_id":"t1","status":"success","output":"a\nb"}`,
			`{"type":"tool_use","tool_name":"read_file","tool_id":"t2","parameters":{"file_path":"/x"}}`,
			`{"type":"tool_result","tool_id":"t2","status":"error","output":"File not found.","error":{"type":"file_not_found","message":"File not found: /x"}}`,
			`{"type":"tool_result","tool_id":"t3","status":"success"}`},
			want: `{"type":"tool_call","id":"t1","name":"run_shell_command","args":{"command":"ls"}}` + "\n" +
				`{"type":"tool_result","id":"t1","content":"a\nb","is_error":false}` + "\n" +
				`{"type":"tool_call","id":"t2","name":"read_file","args":{"file_path":"/x"}}` + "\n" +
				`{"type":"tool_result","id":"t2","content":"File not found: /x","is_error":true}` + "\n" +
				`{"type":"tool_result","id":"t3","content":"","is_error":false}`},
		{name: "error line is a warning", lines: []string{`{"type":"error","severity":"warning","message":"Loop detected"}`},
			want: `{"type":"warning","message":"Loop detected"}`},
		{name: "API error result", lines: []string{initLine,
			`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":400,\"message\":\"API key not valid.\",\"status\":\"INVALID_ARGUMENT\"}}]"},"stats":{"duration_ms":0}}`},
			want: `{"type":"error","message":"API key not valid."}`},
		{name: "other error result", lines: []string{`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns"}}`},
			want: `{"type":"error","message":"Reached max session turns"}`},
		{name: "error result without a message", lines: []string{`{"type":"result","status":"cancelled"}`},
			want: `{"type":"error","message":"the agent reported an error (cancelled)"}`},
		{name: "done without stats", lines: []string{initLine, `{"type":"result","status":"success"}`},
			want: `{"type":"done","session_id":"s-1"}`},
		{name: "noise", lines: []string{"", "Loaded cached credentials.", `{"type":"message","role":"assistant"}`, `{"type":"tool_use"`, `{"type":"future"}`}},
	})
}

var geminiRecorded = map[string]recordedRun{
	"text":   {text: "Hello from the fake model. This answer streams in several pieces."},
	"model":  {text: "Hello from the fake model. This answer streams in several pieces."},
	"bash":   {text: "The command printed: hi", tools: []string{"run_shell_command"}},
	"write":  {text: "Wrote note.txt.", tools: []string{"write_file"}},
	"tools":  {text: "Let me look around first.Looked, failed once, wrote the note.", tools: []string{"run_shell_command", "read_file", "write_file"}, toolErrors: 1},
	"error":  {errorIs: "API key not valid (geminitest)."},
	"resume": {text: "Hello from the fake model. This answer streams in several pieces."},
}

func TestGeminiRecorded(t *testing.T) { checkRecorded(t, "gemini", NewGemini, geminiRecorded) }
