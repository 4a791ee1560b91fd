package parser

import (
	"strconv"
	"testing"
)

func TestCursorRules(t *testing.T) {
	delta := func(text string, ts int) string {
		return `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}]},"session_id":"s","timestamp_ms":` + strconv.Itoa(ts) + `}`
	}
	summary := func(text string) string {
		return `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}]},"session_id":"s"}`
	}
	const (
		init_     = `{"type":"system","subtype":"init","session_id":"s-init","model":"Auto"}`
		shellCall = `{"type":"tool_call","subtype":"started","call_id":"c1","tool_call":{"shellToolCall":{"args":{"command":"ls"}}}}`
		shellDone = `{"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":{"shellToolCall":{"args":{"command":"ls"},"result":{"success":{"exitCode":0,"stdout":"a\n","stderr":""}}}}}`
	)
	runRules(t, NewCursor, []ruleCase{
		{"partial deltas then the segment summary", []string{
			delta("Hel", 1), delta("lo", 2), summary("Hello"),
		}, `{"type":"text","content":"Hel"}
{"type":"text","content":"lo"}`},
		{"a summary marked with model_call_id", []string{
			delta("a", 1), delta("b", 2),
			`{"type":"assistant","message":{"content":[{"type":"text","text":"ab"}]},"model_call_id":"mc","timestamp_ms":3}`,
		}, `{"type":"text","content":"a"}
{"type":"text","content":"b"}`},
		{"a timestamped summary of several deltas is still a summary", []string{
			delta("a", 1), delta("b", 2), delta("ab", 3),
		}, `{"type":"text","content":"a"}
{"type":"text","content":"b"}`},
		{"a delta repeating a one-delta segment is text", []string{
			delta("ha", 1), delta("ha", 2), summary("haha"),
		}, `{"type":"text","content":"ha"}
{"type":"text","content":"ha"}`},
		{"without marks a repeated one-delta segment is its summary", []string{
			summary("Hi"), summary("Hi"),
		}, `{"type":"text","content":"Hi"}`},
		{"segments are split by tool calls", []string{
			delta("Look", 1), summary("Look"), shellCall, shellDone, delta("Look", 5), summary("Look"),
		}, `{"type":"text","content":"Look"}
{"type":"tool_call","id":"c1","name":"shell","args":{"command":"ls"}}
{"type":"tool_result","id":"c1","content":"a\n","is_error":false}
{"type":"text","content":"Look"}`},
		{"a summary printed after the tool call", []string{
			delta("Look", 1), delta("ing", 2), shellCall, summary("Looking"), shellDone, delta("Looking", 5),
		}, `{"type":"text","content":"Look"}
{"type":"text","content":"ing"}
{"type":"tool_call","id":"c1","name":"shell","args":{"command":"ls"}}
{"type":"tool_result","id":"c1","content":"a\n","is_error":false}
{"type":"text","content":"Looking"}`},
		{"a summary printed after the tool's result", []string{
			delta("Look", 1), delta("ing", 2), shellCall, shellDone, summary("Looking"), delta("Done", 6), summary("Done"),
		}, `{"type":"text","content":"Look"}
{"type":"text","content":"ing"}
{"type":"tool_call","id":"c1","name":"shell","args":{"command":"ls"}}
{"type":"tool_result","id":"c1","content":"a\n","is_error":false}
{"type":"text","content":"Done"}`},
		{"full paragraphs without partial output", []string{
			summary("First paragraph."), summary("Second paragraph."),
		}, `{"type":"text","content":"First paragraph."}
{"type":"text","content":"Second paragraph."}`},
		{"text blocks are concatenated, other blocks ignored", []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"a"},{"type":"image","url":"u"},{"type":"text","text":"b"}]}}`,
		}, `{"type":"text","content":"ab"}`},
		{"started is a call and completed a result, never two calls", []string{shellCall, shellDone},
			`{"type":"tool_call","id":"c1","name":"shell","args":{"command":"ls"}}
{"type":"tool_result","id":"c1","content":"a\n","is_error":false}`},
		{"call ids may hold newlines; the name is the key ending in ToolCall", []string{
			`{"type":"tool_call","subtype":"started","call_id":"toolu_1\nfc_2","tool_call":{"meta":{"x":1},"grepToolCall":{"args":{"pattern":"TODO"}},"otherToolCall":{"args":{}}}}`,
			`{"type":"tool_call","subtype":"started","call_id":"x","tool_call":{"ToolCall":{"args":{"a":1}}}}`,
		}, `{"type":"tool_call","id":"toolu_1\nfc_2","name":"grep","args":{"pattern":"TODO"}}
{"type":"tool_call","id":"x","name":"tool","args":{"a":1}}`},
		{"function format: arguments string to args object", []string{
			`{"type":"tool_call","subtype":"started","call_id":"f1","tool_call":{"function":{"name":"search","arguments":"{\"q\": \"go\",\n \"n\": [1, 2]}"}}}`,
			`{"type":"tool_call","subtype":"started","call_id":"f2","tool_call":{"function":{"name":"ping","arguments":"[1,2]"}}}`,
			`{"type":"tool_call","subtype":"started","call_id":"f3","tool_call":{"function":{"name":"obj","arguments":{"already":"object"}}}}`,
			`{"type":"tool_call","subtype":"started","call_id":"f4","tool_call":{"function":{"name":"none"}}}`,
		}, `{"type":"tool_call","id":"f1","name":"search","args":{"q":"go","n":[1,2]}}
{"type":"tool_call","id":"f2","name":"ping","args":{"arguments":"[1,2]"}}
{"type":"tool_call","id":"f3","name":"obj","args":{"already":"object"}}
{"type":"tool_call","id":"f4","name":"none","args":{}}`},
		{"results: success, failure, rejection", []string{
			`{"type":"tool_call","subtype":"completed","call_id":"r1","tool_call":{"readToolCall":{"args":{},"result":{"success":{"content":"file text","totalLines":1}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r2","tool_call":{"shellToolCall":{"args":{},"result":{"success":{"exitCode":2,"stdout":"out","stderr":"err"}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r3","tool_call":{"shellToolCall":{"args":{},"result":{"rejected":{"command":"rm","reason":"needs --force"}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r4","tool_call":{"editToolCall":{"args":{},"result":{"error":{"errorMessage":"no such file"}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r5","tool_call":{"editToolCall":{"args":{},"result":{"error":"plain failure"}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r6","tool_call":{"globToolCall":{"args":{},"result":{"success":{"files":["a.go","b.go"],"totalFiles":2}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r7","tool_call":{"editToolCall":{"args":{},"result":{"success":{"linesAdded":1}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r8","tool_call":{"shellToolCall":{"args":{},"result":{"timeout":{}}}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":"r9","tool_call":{"shellToolCall":{"args":{}}}}`,
		}, `{"type":"tool_result","id":"r1","content":"file text","is_error":false}
{"type":"tool_result","id":"r2","content":"out\nerr","is_error":true}
{"type":"tool_result","id":"r3","content":"rejected: needs --force","is_error":true}
{"type":"tool_result","id":"r4","content":"no such file","is_error":true}
{"type":"tool_result","id":"r5","content":"plain failure","is_error":true}
{"type":"tool_result","id":"r6","content":"a.go\nb.go","is_error":false}
{"type":"tool_result","id":"r7","content":"{\"linesAdded\":1}","is_error":false}
{"type":"tool_result","id":"r8","content":"timeout: {}","is_error":true}
{"type":"tool_result","id":"r9","content":"","is_error":false}`},
		{"other tool_call subtypes and tool calls without a tool are skipped", []string{
			`{"type":"tool_call","subtype":"delta","call_id":"c","tool_call":{"shellToolCall":{"args":{}}}}`,
			`{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"nothing":{}}}`,
		}, ``},
		{"system is never terminal; thinking and user are skipped", []string{
			init_, `{"type":"system","subtype":"status"}`,
			`{"type":"thinking","subtype":"delta","text":"hmm","timestamp_ms":1}`, `{"type":"thinking","subtype":"completed"}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"prompt"}]}}`,
		}, ``},
		{"the result's session id wins", []string{init_, `{"type":"result","subtype":"success","is_error":false,"duration_ms":4500,"session_id":"s-result"}`},
			`{"type":"done","session_id":"s-result","duration_ms":4500}`},
		{"init's session id when the result has none; no duration stays absent", []string{init_, `{"type":"result","subtype":"success","is_error":false}`},
			`{"type":"done","session_id":"s-init"}`},
		{"duration 0 is a value", []string{`{"type":"result","subtype":"success","duration_ms":0,"session_id":"s"}`},
			`{"type":"done","session_id":"s","duration_ms":0}`},
		{"an error result is an error without duration", []string{
			init_, `{"type":"result","subtype":"error","is_error":true,"duration_ms":99,"result":"boom","session_id":"s"}`,
		}, `{"type":"error","message":"boom"}`},
		{"subtype error alone is an error", []string{`{"type":"result","subtype":"error","error":{"message":"denied"}}`},
			`{"type":"error","message":"denied"}`},
		{"an empty error result still says something", []string{`{"type":"result","is_error":true}`},
			`{"type":"error","message":"the agent reported an error"}`},
		{"fields of an unexpected kind read as absent", []string{
			`{"type":"assistant","message":"plain"}`,
			`{"type":"assistant","message":{"content":[1,{"type":"text","text":"ok"}]}}`,
			`{"type":"tool_call","subtype":"started","call_id":3,"tool_call":{"readToolCall":{"args":[1]}}}`,
			`{"type":"tool_call","subtype":"completed","call_id":null,"tool_call":{"readToolCall":{"result":{"success":{"content":5}}}}}`,
			`{"type":"tool_call","subtype":"started","tool_call":"shellToolCall"}`,
			`{"type":"result","message":null,"session_id":7,"is_error":"yes","duration_ms":"5","result":[1]}`,
		}, `{"type":"text","content":"ok"}
{"type":"tool_call","id":"","name":"read","args":{}}
{"type":"tool_result","id":"","content":"{\"content\":5}","is_error":false}
{"type":"done","session_id":""}`},
		{"unknown, non-JSON and broken lines are skipped", []string{
			`{"type":"interaction_query","x":{}}`, `nope`, `{"type":"assistant","message":`, `{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}}`,
		}, ``},
		{"ANSI, odd Unicode and invalid UTF-8", []string{
			"\x1b[1m" + `{"type":"assistant","message":{"content":[{"type":"text","text":"\ud83e\udd16 ok"}]}}` + "\x1b[0m",
			"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"\xe2\x82 half\"}]}}",
		}, `{"type":"text","content":"🤖 ok"}
{"type":"text","content":"` + "\ufffd\ufffd" + ` half"}`},
	})
}
