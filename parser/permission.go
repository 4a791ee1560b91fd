package parser

import (
	"encoding/json"
	"strings"
)

// Question is one question of an AskUserQuestion permission request: the
// agent asks the user to pick among options, and the answer goes back as
// the request's allow (engine.PermissionAnswer.Answers).
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header,omitempty"`
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
}

// Option is one choice of a Question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Tools whose permission requests are not about a side effect.
const (
	// AskUserQuestion: the agent asks the user to pick; Questions holds
	// what to show.
	AskUserQuestion = "AskUserQuestion"
	// ExitPlanMode: in plan mode, the agent proposes its plan (args.plan)
	// and asks to start working on it.
	ExitPlanMode = "ExitPlanMode"
)

// controlRequest turns a Claude Code control_request line (subtype
// can_use_tool, written by --permission-prompt-tool stdio) into a
// PermissionRequest: ID the request_id the answer must name, Name the tool,
// Args its input, Permission the CLI's permission_suggestions (Suggestions:
// what "allow for this session" sends back) and an AskUserQuestion's
// questions (Questions), nil when it has neither.
// Other control requests, and one without an id or tool, give no event.
func controlRequest(requestID jstr, raw []byte) (Event, bool) {
	var req struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		Suggestions json.RawMessage `json:"permission_suggestions"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &req) != nil || req.Subtype != "can_use_tool" {
		return Event{}, false
	}
	id := requestID.String()
	if id == "" || req.ToolName == "" {
		return Event{}, false
	}
	var perm Permission
	if s := strings.TrimSpace(string(req.Suggestions)); strings.HasPrefix(s, "[") && s != "[]" {
		perm.Suggestions = json.RawMessage(s)
	}
	if req.ToolName == AskUserQuestion {
		var in struct {
			Questions []Question `json:"questions"`
		}
		if json.Unmarshal(req.Input, &in) == nil {
			perm.Questions = in.Questions
		}
	}
	e := Event{Type: PermissionRequest, ID: id, Name: req.ToolName, Args: objectOrEmpty(req.Input)}
	if perm.Suggestions != nil || perm.Questions != nil {
		e.Permission = &perm
	}
	return e, true
}
