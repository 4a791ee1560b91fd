package anthropictest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// The built-in scenarios, selected with Server.BaseURL(name):
//
//	text        one text answer, streamed in several deltas
//	thinking    a thinking block, then a text answer
//	bash        a Bash tool use running `echo hi`; once the result is back,
//	            a text answer quoting it
//	tools       several tools in one turn: text + Bash + Write in one
//	            message, then Read of the written file and of a missing one
//	            (an error result) in a second, then a text answer
//	agent       an Agent (subagent) tool use; the subagent's own model call
//	            answers text, so the tool result is an array of text blocks
//	overloaded  every model call fails with 529 overloaded_error
//	ask         tools that need permission, one per step: Write AskFile
//	            ("one"), Edit it to "two", Bash `touch AskBashFile`; then a
//	            text answer "Results: " + each result (errors marked
//	            "error: ") joined by " | "
//	question    an AskUserQuestion (QuestionText, options Red and Blue);
//	            then "You picked: " + the tool result
//	plan        an ExitPlanMode proposing PlanText; approved (a result that
//	            is not an error), a Write of PlanFile and then PlanDone;
//	            refused, the text KeepPlanning
const (
	ScenarioText       = "text"
	ScenarioThinking   = "thinking"
	ScenarioBash       = "bash"
	ScenarioTools      = "tools"
	ScenarioAgent      = "agent"
	ScenarioOverloaded = "overloaded"
	ScenarioAsk        = "ask"
	ScenarioQuestion   = "question"
	ScenarioPlan       = "plan"
)

// What the approval scenarios use and answer.
const (
	AskFile      = "asked.txt"
	AskBashFile  = "made-by-bash.txt"
	QuestionText = "Which color should the button be?"
	PlanText     = "1. Write plan.txt\n2. Say done"
	PlanFile     = "plan.txt"
	PlanDone     = "The plan is done."
	KeepPlanning = "Keeping to the plan mode, then."
)

// Answers the built-in scenarios give, for tests to compare with.
const (
	TextAnswer     = "Hello from the fake model. This answer streams in several pieces."
	ThinkingText   = "The user wants a greeting; a short one will do."
	ThinkingAnswer = "Hi! I thought about it first."
	BashAnswer     = "The command printed: hi"
	ToolsNoteFile  = "note.txt"
	ToolsNote      = "written by the fake model\n"
	ToolsAnswer    = "Done: 2 tool results in the last step, 1 of them errors."
	SubagentAnswer = "The subagent says hi."
	AgentAnswer    = "The agent answered."
)

// builtin holds the scenarios every Server starts with.
var builtin = map[string]Responder{
	ScenarioText: func(*Request) Reply { return Text(TextAnswer) },
	ScenarioThinking: func(*Request) Reply {
		return Reply{Blocks: []Block{ThinkingBlock(ThinkingText), TextBlock(ThinkingAnswer)}}
	},
	ScenarioBash: func(r *Request) Reply {
		if r.Step() == 0 {
			return Reply{Blocks: []Block{ToolUse("toolu_bash_1", "Bash",
				map[string]string{"command": "echo hi", "description": "Print hi"})}}
		}
		var out []string
		for _, res := range r.ToolResults() {
			out = append(out, strings.TrimSpace(res.ResultText()))
		}
		return Text("The command printed: " + strings.Join(out, " "))
	},
	ScenarioTools: func(r *Request) Reply {
		dir := r.Workdir()
		switch r.Step() {
		case 0:
			return Reply{Blocks: []Block{
				TextBlock("Let me run a command and write a note."),
				ToolUse("toolu_tools_bash", "Bash", map[string]string{"command": "echo one", "description": "Print one"}),
				ToolUse("toolu_tools_write", "Write", map[string]string{
					"file_path": filepath.Join(dir, ToolsNoteFile), "content": ToolsNote}),
			}}
		case 1:
			return Reply{Blocks: []Block{
				ToolUse("toolu_tools_read", "Read", map[string]string{"file_path": filepath.Join(dir, ToolsNoteFile)}),
				ToolUse("toolu_tools_missing", "Read", map[string]string{"file_path": filepath.Join(dir, "missing.txt")}),
			}}
		default:
			errs := 0
			for _, res := range r.ToolResults() {
				if res.IsError {
					errs++
				}
			}
			return Text(fmt.Sprintf("Done: %d tool results in the last step, %d of them errors.", len(r.ToolResults()), errs))
		}
	},
	ScenarioAgent: func(r *Request) Reply {
		if strings.Contains(r.LastUser().Text(), subagentMarker) {
			return Text(SubagentAnswer)
		}
		if r.Step() == 0 {
			return Reply{Blocks: []Block{ToolUse("toolu_agent_1", "Agent", map[string]string{
				"description": "Say hi", "prompt": subagentMarker + ": say hi", "subagent_type": "general-purpose"})}}
		}
		return Text(AgentAnswer)
	},
	ScenarioOverloaded: func(*Request) Reply { return Overloaded() },
	ScenarioAsk: func(r *Request) Reply {
		file := filepath.Join(r.Workdir(), AskFile)
		switch r.Step() {
		case 0:
			return Reply{Blocks: []Block{ToolUse("toolu_ask_write", "Write", map[string]string{"file_path": file, "content": "one\n"})}}
		case 1:
			return Reply{Blocks: []Block{ToolUse("toolu_ask_edit", "Edit", map[string]any{
				"file_path": file, "old_string": "one", "new_string": "two", "replace_all": false})}}
		case 2:
			return Reply{Blocks: []Block{ToolUse("toolu_ask_bash", "Bash", map[string]string{
				"command": "touch " + AskBashFile, "description": "Make a file"})}}
		default:
			return Text("Results: " + strings.Join(askResults(r), " | "))
		}
	},
	ScenarioQuestion: func(r *Request) Reply {
		if r.Step() == 0 {
			return Reply{Blocks: []Block{ToolUse("toolu_question", "AskUserQuestion", map[string]any{
				"questions": []any{map[string]any{"question": QuestionText, "header": "Color", "multiSelect": false,
					"options": []any{map[string]string{"label": "Red", "description": "warm"},
						map[string]string{"label": "Blue", "description": "cold"}}}}})}}
		}
		return Text("You picked: " + strings.Join(askResults(r), " | "))
	},
	ScenarioPlan: func(r *Request) Reply {
		switch r.Step() {
		case 0:
			return Reply{Blocks: []Block{ToolUse("toolu_plan", "ExitPlanMode", map[string]string{"plan": PlanText})}}
		case 1:
			if res := r.ToolResults(); len(res) == 0 || res[0].IsError {
				return Text(KeepPlanning)
			}
			return Reply{Blocks: []Block{ToolUse("toolu_plan_write", "Write", map[string]string{
				"file_path": filepath.Join(r.Workdir(), PlanFile), "content": "planned\n"})}}
		default:
			return Text(PlanDone)
		}
	},
}

// askResults lists the tool results of the request's last user message,
// an error's prefixed "error: ".
func askResults(r *Request) []string {
	var out []string
	for _, res := range r.ToolResults() {
		text := strings.TrimSpace(res.ResultText())
		if res.IsError {
			text = "error: " + text
		}
		out = append(out, text)
	}
	return out
}

// subagentMarker tells the subagent's model calls from the main agent's.
const subagentMarker = "SUBAGENT-TASK"

var workdirLine = regexp.MustCompile(`(?m)(?:Primary working directory|Working directory): *(\S[^\n"\\]*)`)

// Workdir is the working directory the CLI states in its system prompt
// ("Primary working directory: /path"), or "" when it states none.
func (r *Request) Workdir() string {
	if m := workdirLine.FindSubmatch(r.System); m != nil {
		return strings.TrimSpace(string(m[1]))
	}
	return ""
}
