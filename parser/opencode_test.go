package parser

import "testing"

func TestOpenCodeRules(t *testing.T) {
	const (
		start  = `{"type":"step_start","timestamp":1000,"sessionID":"ses_1","part":{"type":"step-start"}}`
		stop   = `{"type":"step_finish","timestamp":1500,"sessionID":"ses_1","part":{"reason":"stop","type":"step-finish","tokens":{"total":130,"input":100,"output":10,"reasoning":5,"cache":{"write":10,"read":5}},"cost":0.02}}`
		toolsF = `{"type":"step_finish","timestamp":1200,"sessionID":"ses_1","part":{"reason":"tool-calls","type":"step-finish","tokens":{"input":50,"output":5},"cost":0.01}}`
	)
	runRules(t, NewOpenCode, []ruleCase{
		{name: "texts, tools and the step counts", lines: []string{start,
			`{"type":"text","timestamp":1100,"sessionID":"ses_1","part":{"type":"text","text":"Looking."}}`,
			`{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"false"},"output":"","metadata":{"exit":1}}}}`,
			`{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"read","callID":"c2","state":{"status":"error","input":{"filePath":"/x"},"error":"File not found: /x"}}}`,
			toolsF, start,
			`{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Done."}}`, stop},
			want: `{"type":"text","content":"Looking."}` + "\n" +
				`{"type":"tool_call","id":"c1","name":"bash","args":{"command":"false"}}` + "\n" +
				`{"type":"tool_result","id":"c1","content":"","is_error":true}` + "\n" +
				`{"type":"tool_call","id":"c2","name":"read","args":{"filePath":"/x"}}` + "\n" +
				`{"type":"tool_result","id":"c2","content":"File not found: /x","is_error":true}` + "\n" +
				`{"type":"text","content":"\n\nDone."}`},
		{name: "error", lines: []string{`{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Overloaded","statusCode":529}}}`},
			want: `{"type":"error","message":"Overloaded"}`},
		{name: "error without data", lines: []string{`{"type":"error","error":{"name":"ProviderAuthError"}}`},
			want: `{"type":"error","message":"ProviderAuthError"}`},
		{name: "noise", lines: []string{"", "{", `{"type":"text","part":7}`, `{"type":"tool_use"}`, `{"type":"future"}`}},
	})
}

func TestOpenCodeEnd(t *testing.T) {
	const (
		start = `{"type":"step_start","timestamp":1000,"sessionID":"ses_1","part":{"type":"step-start"}}`
		stop  = `{"type":"step_finish","timestamp":1500,"sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":100,"output":10,"reasoning":5,"cache":{"write":10,"read":5}},"cost":0.02}}`
		tools = `{"type":"step_finish","timestamp":1200,"sessionID":"ses_1","part":{"reason":"tool-calls","tokens":{"input":50,"output":5},"cost":0.01}}`
	)
	for _, tc := range []struct {
		name     string
		lines    []string
		exitedOK bool
		want     string // "" for no terminal event from End
	}{
		{"done after stop", []string{start, tools, start, stop}, true,
			`{"type":"done","session_id":"ses_1","duration_ms":500,"cost_usd":0.03,"num_turns":2,"input_tokens":165,"output_tokens":20}`},
		{"unclean exit after stop", []string{start, stop}, false, ""},
		{"no steps", []string{`{"type":"text","part":{"text":"hi"}}`}, true, ""},
		{"last step not stop", []string{start, tools}, true,
			`{"type":"error","message":"the agent stopped before it finished (its last step ended with \"tool-calls\")"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGuard(NewOpenCode())
			for _, l := range tc.lines {
				g.Parse([]byte(l))
			}
			e, ok := g.End(tc.exitedOK, "exit code 1")
			got, _ := e.MarshalJSON()
			switch {
			case tc.want == "" && (!ok || e.Reason != Crashed):
				t.Errorf("End gave %s (%v), want Finish's crash", got, ok)
			case tc.want != "" && (!ok || string(got) != tc.want):
				t.Errorf("End gave %s (%v), want %s", got, ok, tc.want)
			}
			if _, again := g.End(true, ""); again {
				t.Error("End delivered a second terminal event")
			}
		})
	}
}

var openCodeRecorded = map[string]recordedRun{
	"text":   {text: "Hello from the fake model. This answer streams in several pieces."},
	"bash":   {text: "The command printed: hi", tools: []string{"bash"}},
	"write":  {text: "Wrote note.txt.", tools: []string{"write"}},
	"tools":  {text: "Let me look around first.\n\nLooked, failed once, wrote the note.", tools: []string{"bash", "read", "write"}, toolErrors: 1},
	"error":  {errorIs: "prompt is too long (anthropictest)"},
	"resume": {text: "Hello from the fake model. This answer streams in several pieces."},
}

func TestOpenCodeRecorded(t *testing.T) { checkRecorded(t, "opencode", NewOpenCode, openCodeRecorded) }
