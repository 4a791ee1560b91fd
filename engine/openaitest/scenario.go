package openaitest

import (
	"fmt"
	"strings"
)

// The built-in scenarios, selected with Server.BaseURL(name):
//
//	text       one assistant message, streamed in several deltas, after a
//	           reasoning item (not answer text)
//	bash       an exec_command call running `echo hi`; once its output is
//	           back, a message quoting it
//	write      an apply_patch (run through exec_command, as Codex's
//	           instructions tell the model) adding WriteFile, then a message
//	tools      several commands, one with a long output and one that
//	           fails, then an apply_patch, then a message
//	error      every call fails with HTTP 400 invalid_request_error
//	failed     every stream ends in response.failed
//	overloaded every call fails with HTTP 500 server_error (Codex retries)
const (
	ScenarioTools      = "tools"
	ScenarioOverloaded = "overloaded"

	ScenarioText   = "text"
	ScenarioBash   = "bash"
	ScenarioWrite  = "write"
	ScenarioError  = "error"
	ScenarioFailed = "failed"
)

// Answers and values the built-in scenarios use, for tests to compare with.
const (
	TextAnswer    = "Hello from the fake model. This answer streams in several pieces."
	ReasoningText = "The user wants a greeting."
	BashAnswer    = "The command printed: hi"
	WriteFile     = "note.txt"
	WriteContent  = "written by the fake model"
	WriteAnswer   = "Wrote note.txt."
	ToolsAnswer   = "Looked, failed once, wrote the note."
	ErrorMessage  = "The model `fake` does not exist (openaitest)."
	FailedMessage = "the fake model failed mid-stream (openaitest)"
)

var builtin = map[string]Responder{
	ScenarioText: func(*Request) Reply {
		return Reply{Items: []Output{Reasoning(ReasoningText), MessageItem(TextAnswer)}}
	},
	ScenarioBash: func(r *Request) Reply {
		if r.Step() == 0 {
			return Reply{Items: []Output{FunctionCall("call_bash_1", "exec_command", map[string]any{"cmd": "echo hi", "yield_time_ms": 5000})}}
		}
		var out []string
		for _, o := range r.Outputs() {
			out = append(out, lastLine(o.OutputText()))
		}
		return Text("The command printed: " + strings.Join(out, " "))
	},
	ScenarioWrite: func(r *Request) Reply {
		if r.Step() == 0 {
			patch := fmt.Sprintf("*** Begin Patch\n*** Add File: %s\n+%s\n*** End Patch\n", WriteFile, WriteContent)
			return Reply{Items: []Output{FunctionCall("call_write_1", "exec_command",
				map[string]any{"cmd": "apply_patch <<'EOF'\n" + patch + "EOF\n"})}}
		}
		return Text(WriteAnswer)
	},
	ScenarioError: func(*Request) Reply {
		return Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: ErrorMessage}
	},
	ScenarioFailed: func(*Request) Reply { return Reply{Failed: FailedMessage} },
	ScenarioOverloaded: func(*Request) Reply {
		return Reply{Status: 500, ErrorType: "server_error", ErrorMessage: "The server is overloaded (openaitest)."}
	},
	ScenarioTools: func(r *Request) Reply {
		switch r.Step() {
		case 0:
			return Reply{Items: []Output{MessageItem("Let me look around first."),
				FunctionCall("call_tools_seq", "exec_command", map[string]any{"cmd": "seq 1 20000", "max_output_tokens": 100000})}}
		case 1:
			return Reply{Items: []Output{FunctionCall("call_tools_false", "exec_command", map[string]any{"cmd": "ls missing-file"})}}
		case 2:
			patch := fmt.Sprintf("*** Begin Patch\n*** Add File: %s\n+%s\n*** End Patch\n", WriteFile, WriteContent)
			return Reply{Items: []Output{FunctionCall("call_tools_patch", "exec_command", map[string]any{"cmd": "apply_patch <<'EOF'\n" + patch + "EOF\n"})}}
		}
		return Text(ToolsAnswer)
	},
}

// lastLine is the last non-empty line of a tool output (Codex wraps a
// command's output in a few lines of its own).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
