package geminitest

import (
	"path/filepath"
	"strings"
)

// The built-in scenarios, selected with Server.BaseURL(name):
//
//	text       one text answer, streamed in several chunks, after a thought
//	           (not answer text)
//	bash       a run_shell_command call running `echo hi`; once its result
//	           is back, a text answer quoting it
//	write      a write_file call writing WriteFile, then a text answer
//	tools      a command with a long output, a read of a missing file (an
//	           error result), a write_file, then a text answer
//	error      every call fails with 400 INVALID_ARGUMENT
//	exhausted  every call fails with 429 RESOURCE_EXHAUSTED (the CLI
//	           retries for minutes)
const (
	ScenarioText      = "text"
	ScenarioBash      = "bash"
	ScenarioWrite     = "write"
	ScenarioTools     = "tools"
	ScenarioError     = "error"
	ScenarioExhausted = "exhausted"
)

// Answers and values the built-in scenarios use, for tests to compare with.
const (
	TextAnswer   = "Hello from the fake model. This answer streams in several pieces."
	ThoughtText  = "The user wants a greeting."
	BashAnswer   = "The command printed: hi"
	WriteFile    = "note.txt"
	WriteContent = "written by the fake model\n"
	WriteAnswer  = "Wrote note.txt."
	ErrorMessage = "API key not valid (geminitest)."
	ToolsAnswer  = "Looked, failed once, wrote the note."
)

var builtin = map[string]Responder{
	ScenarioText: func(*Request) Reply {
		return Reply{Parts: []Part{{Text: ThoughtText, Thought: true}, {Text: TextAnswer}}}
	},
	ScenarioBash: func(r *Request) Reply {
		if r.Step() == 0 {
			return Call("run_shell_command", map[string]any{"command": "echo hi", "description": "Print hi"})
		}
		var out []string
		for _, res := range r.Results() {
			out = append(out, commandOutput(res.Output()))
		}
		return Text("The command printed: " + strings.Join(out, " "))
	},
	ScenarioWrite: func(r *Request) Reply {
		if r.Step() == 0 {
			return Call("write_file", map[string]any{"file_path": filepath.Join(r.Workdir(), WriteFile), "content": WriteContent})
		}
		return Text(WriteAnswer)
	},
	ScenarioTools: func(r *Request) Reply {
		switch r.Step() {
		case 0:
			return Reply{Parts: []Part{{Text: "Let me look around first."},
				{FunctionCall: &FunctionCall{Name: "run_shell_command", Args: map[string]any{"command": "seq 1 20000", "description": "Count"}}}}}
		case 1:
			return Call("read_file", map[string]any{"file_path": filepath.Join(r.Workdir(), "missing.txt")})
		case 2:
			return Call("write_file", map[string]any{"file_path": filepath.Join(r.Workdir(), WriteFile), "content": WriteContent})
		}
		return Text(ToolsAnswer)
	},
	ScenarioError: func(*Request) Reply { return Reply{Status: 400, ErrorMessage: ErrorMessage} },
	ScenarioExhausted: func(*Request) Reply {
		return Reply{Status: 429, ErrorMessage: "Resource has been exhausted (geminitest)."}
	},
}

// Workdir is the first workspace directory the CLI states in its session
// context ("- **Workspace Directories:**\n  - /path"), or "".
func (r *Request) Workdir() string {
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			_, rest, ok := strings.Cut(p.Text, "**Workspace Directories:**\n")
			if !ok {
				continue
			}
			line, _, _ := strings.Cut(rest, "\n")
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		}
	}
	return ""
}

// commandOutput is what a command printed, from run_shell_command's result
// ("<untrusted_context>\nOutput: hi\nProcess Group PGID: 123\n..."), or
// the whole result when it has no Output line.
func commandOutput(result string) string {
	for _, line := range strings.Split(result, "\n") {
		if out, ok := strings.CutPrefix(line, "Output: "); ok {
			return strings.TrimSpace(out)
		}
	}
	return strings.TrimSpace(result)
}
