package parser

import "testing"

func TestClaudeCodeRules(t *testing.T) {
	const (
		init_   = `{"type":"system","subtype":"init","session_id":"s-init","tools":["Bash"]}`
		resultS = `{"type":"result","subtype":"success","is_error":false,"duration_ms":745,"num_turns":5,"result":"ok","session_id":"s-result","total_cost_usd":0.004875}`
	)
	runRules(t, NewClaudeCode, []ruleCase{
		{"text block", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"Hello"}]}}`,
		}, `{"type":"text","content":"Hello"}`},
		{"mixed blocks in one line keep their order", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"A"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"type":"thinking","thinking":"no","signature":"x"},{"type":"text","text":"B"}]}}`,
		}, `{"type":"text","content":"A"}
{"type":"tool_call","id":"t1","name":"Bash","args":{"command":"ls"}}
{"type":"text","content":"B"}`},
		{"a plain string content is text", []string{
			`{"type":"assistant","message":{"id":"m","content":"plain"}}`,
		}, `{"type":"text","content":"plain"}`},
		{"thinking is not answer text", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"thinking","thinking":"secret plan","signature":"sig"}]}}`,
			`{"type":"assistant","message":{"id":"m","content":[{"type":"redacted_thinking","data":"xx"}]}}`,
		}, ``},
		{"tool_use without input has empty args", []string{
			`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"TodoRead"}]}}`,
		}, `{"type":"tool_call","id":"t","name":"TodoRead","args":{}}`},
		{"tool_result content as a string, an array, and an error", []string{
			`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"plain","is_error":false}]},"tool_use_result":{"stdout":"plain"}}`,
			`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t2","type":"tool_result","content":[{"type":"text","text":"one"},{"type":"image","source":{}},{"type":"text","text":"two"}]}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t3","type":"tool_result","content":"Exit code 2","is_error":true}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t4","type":"tool_result"}]}}`,
		}, `{"type":"tool_result","id":"t1","content":"plain","is_error":false}
{"type":"tool_result","id":"t2","content":"one\ntwo","is_error":false}
{"type":"tool_result","id":"t3","content":"Exit code 2","is_error":true}
{"type":"tool_result","id":"t4","content":"","is_error":false}`},
		{"user prompt echo and text blocks are not events", []string{
			`{"type":"user","message":{"role":"user","content":"the prompt"}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"SUBAGENT-TASK"}]},"parent_tool_use_id":"t"}`,
		}, ``},
		{"a user message replayed from stdin is taken in", []string{
			`{"type":"user","message":{"role":"user","content":"STEER: also say bye"},"session_id":"s","parent_tool_use_id":null,"uuid":"u","timestamp":"2026-12-01T11:17:58.000Z","isReplay":true}`,
			`{"type":"user","message":{"role":"user","content":"not replayed"},"isReplay":false}`,
		}, `{"type":"user_message"}`},
		{"system lines are never terminal; only api_retry yields a warning", []string{
			init_,
			`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":595.88,"error_status":529,"error":"overloaded"}`,
			`{"type":"system","subtype":"api_retry"}`,
			`{"type":"system","subtype":"status","status":"compacting"}`,
			`{"type":"system","subtype":"thinking_tokens","tokens":12}`,
			`{"type":"system","subtype":"task_started","task_id":"x"}`,
		}, `{"type":"warning","message":"the model API failed (529 overloaded); retrying, attempt 1 of 2"}
{"type":"warning","message":"the model API failed; retrying"}`},
		{"done carries every field of the result", []string{init_, resultS},
			`{"type":"done","session_id":"s-result","duration_ms":745,"cost_usd":0.004875,"num_turns":5}`},
		{"done falls back to init's session id; absent numbers stay absent", []string{
			init_, `{"type":"result","subtype":"success","is_error":false}`,
		}, `{"type":"done","session_id":"s-init"}`},
		{"zero duration and cost are values", []string{
			`{"type":"result","subtype":"success","is_error":false,"duration_ms":0,"total_cost_usd":0,"num_turns":0,"session_id":"s"}`,
		}, `{"type":"done","session_id":"s","duration_ms":0,"cost_usd":0,"num_turns":0}`},
		{"null numbers are absent", []string{
			`{"type":"result","is_error":false,"duration_ms":null,"total_cost_usd":null,"num_turns":"3","session_id":"s"}`,
		}, `{"type":"done","session_id":"s"}`},
		{"is_error with subtype success is an error with the result text", []string{
			`{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"duration_ms":2254,"result":"API Error: 529 Overloaded.","session_id":"s"}`,
		}, `{"type":"error","message":"API Error: 529 Overloaded."}`},
		{"errors[] are joined", []string{
			`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: x","and more",7]}`,
		}, `{"type":"error","message":"No conversation found with session ID: x; and more"}`},
		{"an error result says something even when empty", []string{
			`{"type":"result","subtype":"error_max_turns","is_error":true}`,
		}, `{"type":"error","message":"the agent reported an error (error_max_turns)"}`},
		{"errors without is_error are still done", []string{
			`{"type":"result","subtype":"success","errors":["odd"],"session_id":"s"}`,
		}, `{"type":"done","session_id":"s"}`},
		{"synthetic API error text is not answer text", []string{
			`{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529"}]},"error":"server_error"}`,
		}, ``},
		{"subagent text is dropped, its tools are kept", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"inner"},{"type":"tool_use","id":"t","name":"Read","input":{}}]},"parent_tool_use_id":"toolu_task"}`,
			`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"outer"}]},"parent_tool_use_id":null}`,
		}, `{"type":"tool_call","id":"t","name":"Read","args":{}}
{"type":"text","content":"outer"}`},
		{"unknown types and fields are skipped", []string{
			`{"type":"control_request","request":{"subtype":"can_use_tool"}}`,
			`{"type":"assistant","extra":[1,{"a":[true,false,null]}],"message":{"id":"m","new":{"x":-1.5e+3},"content":[{"type":"server_tool_use","id":"s"},{"type":"text","text":"kept","citations":null}]}}`,
			`{"type":42}`, `{}`, `[]`, `"x"`,
		}, `{"type":"text","content":"kept"}`},
		{"fields of an unexpected kind read as absent", []string{
			`{"type":"assistant","message":null}`,
			`{"type":"assistant","message":{"id":5,"content":[7,"x",{"type":"text","text":9},{"type":"text","text":"ok"}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":1,"content":{"odd":true},"is_error":"yes"}]}}`,
			`{"type":"stream_event","event":"message_start"}`,
			`{"type":"stream_event","event":{"type":"content_block_delta","index":"0","delta":[]}}`,
			`{"type":"result","message":null,"event":5,"session_id":7,"is_error":"yes","duration_ms":"5","errors":{},"result":[1]}`,
		}, `{"type":"text","content":"ok"}
{"type":"tool_result","id":"","content":"","is_error":false}
{"type":"done","session_id":""}`},
		{"non-JSON and broken lines are skipped", []string{
			``, `   `, `hello`, `{"type":"assistant"`, `{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}} trailing`,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"bad \x escape"}]}}`,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"ctl ` + "\x01" + `"}]}}`,
		}, ``},
		{"a JSON line wrapped in ANSI escapes is parsed", []string{
			"\x1b[2K\x1b[32m" + `{"type":"assistant","message":{"content":[{"type":"text","text":"green"}]}}` + "\x1b[0m\r",
			"\x1b]0;title\x07" + `{"type":"assistant","message":{"content":[{"type":"text","text":"osc"}]}}`,
		}, `{"type":"text","content":"green"}
{"type":"text","content":"osc"}`},
		{"odd Unicode and invalid UTF-8", []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"\u00e9\ud83d\ude00 \u200b\u202eRTL \u0000 \ud800x \"q\" \\ \/"}]}}`,
			"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"raw \xff\xc3 é 👍\"}]}}",
			`{"typ\u0065":"assistant","message":{"content":[{"type":"text","text":"escaped key"}]}}`,
		}, `{"type":"text","content":"é😀 ` + "\u200b\u202e" + `RTL \u0000 ` + "\ufffd" + `x \"q\" \\ /"}
{"type":"text","content":"raw ` + "\ufffd\ufffd" + ` é 👍"}
{"type":"text","content":"escaped key"}`},
	})
}

func TestClaudeCodePartialMessages(t *testing.T) {
	start := func(id string) string {
		return `{"type":"stream_event","event":{"type":"message_start","message":{"id":"` + id + `","content":[]}}}`
	}
	blockStart := func(i, typ string) string {
		return `{"type":"stream_event","event":{"type":"content_block_start","index":` + i + `,"content_block":{"type":"` + typ + `"}}}`
	}
	delta := func(i, text string) string {
		return `{"type":"stream_event","event":{"type":"content_block_delta","index":` + i + `,"delta":{"type":"text_delta","text":"` + text + `"}}}`
	}
	text := func(id, text string) string {
		return `{"type":"assistant","message":{"id":"` + id + `","content":[{"type":"text","text":"` + text + `"}]}}`
	}
	runRules(t, NewClaudeCode, []ruleCase{
		{"deltas are text at once, the whole block is not repeated", []string{
			start("m1"), blockStart("0", "text"), delta("0", "Hel"), delta("0", "lo"), text("m1", "Hello"),
		}, `{"type":"text","content":"Hel"}
{"type":"text","content":"lo"}`},
		{"the part the deltas missed is delivered", []string{
			start("m1"), blockStart("0", "text"), delta("0", "Hel"), text("m1", "Hello!"),
		}, `{"type":"text","content":"Hel"}
{"type":"text","content":"lo!"}`},
		{"a block without deltas is delivered whole", []string{
			start("m1"), blockStart("0", "thinking"), blockStart("1", "text"), text("m1", "whole"),
		}, `{"type":"text","content":"whole"}`},
		{"blocks match by order among text blocks", []string{
			start("m1"), blockStart("0", "text"), delta("0", "A"), blockStart("1", "tool_use"), blockStart("2", "text"), delta("2", "B"),
			text("m1", "A"), `{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`, text("m1", "B"),
		}, `{"type":"text","content":"A"}
{"type":"text","content":"B"}
{"type":"tool_call","id":"t","name":"Bash","args":{}}`},
		{"another message's text is not deduplicated", []string{
			start("m1"), blockStart("0", "text"), delta("0", "Hi"), text("m2", "Hi"),
		}, `{"type":"text","content":"Hi"}
{"type":"text","content":"Hi"}`},
		{"a new message starts afresh", []string{
			start("m1"), blockStart("0", "text"), delta("0", "One"), text("m1", "One"),
			start("m2"), blockStart("0", "text"), delta("0", "Two"), text("m2", "Two"),
		}, `{"type":"text","content":"One"}
{"type":"text","content":"Two"}`},
		{"deltas without message_start still count", []string{
			delta("0", "X"), text("m9", "X"),
		}, `{"type":"text","content":"X"}`},
		{"thinking and tool input deltas are not text", []string{
			start("m1"),
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}}`,
			`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}}`,
			`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"s"}}}`,
		}, ``},
		{"a hostile index is not tracked but the text is not lost", []string{
			start("m1"), delta("99999999999", "big"), delta("-1", "neg"),
		}, `{"type":"text","content":"big"}
{"type":"text","content":"neg"}`},
		{"subagent deltas are dropped", []string{
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"inner"}},"parent_tool_use_id":"t"}`,
		}, ``},
	})
}
