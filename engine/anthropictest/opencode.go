package anthropictest

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// PinnedOpenCodeVersion is the OpenCode CLI version the recorded fixtures
// come from and `make tools` installs.
const PinnedOpenCodeVersion = "1.18.33"

// defaultOpenCodeBin is where `make tools` installs the pinned CLI,
// relative to the module root.
const defaultOpenCodeBin = ".tools/opencode/node_modules/.bin/opencode"

// OpenCodeBin returns the path of the real OpenCode CLI for tests:
// $GOLEM_OPENCODE_BIN, else the pinned CLI that `make tools` installs in
// the module's .tools folder. When it is missing the test is skipped, or
// fails when GOLEM_REQUIRE_TOOLS=1 (as `make test` sets).
func OpenCodeBin(t testing.TB) string {
	t.Helper()
	return clitest.Bin(t, "the OpenCode CLI", "GOLEM_OPENCODE_BIN", defaultOpenCodeBin)
}

// OpenCodeModel is the model the OpenCode runs of the tests ask for.
const OpenCodeModel = "anthropic/claude-sonnet-4-5"

// OpenCodeVars returns the variables that point one run of the real
// OpenCode CLI at baseURL (e.g. Server.BaseURL(ScenarioOpenCodeBash))
// offline: home as HOME (OpenCode keeps its sessions under
// ~/.local/share/opencode), the key "test" in ANTHROPIC_API_KEY, and
// OPENCODE_CONFIG_CONTENT, a config whose anthropic provider has that base
// URL (with /v1), the model OpenCodeModel, and no auto-update or sharing. Give them to an
// engine as Config.Env.
func OpenCodeVars(home, baseURL string) map[string]string {
	cfg, err := json.Marshal(map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"provider":   map[string]any{"anthropic": map[string]any{"options": map[string]any{"baseURL": baseURL + "/v1"}}},
		"model":      OpenCodeModel,
		"autoupdate": false,
		"share":      "disabled",
	})
	if err != nil {
		panic(err)
	}
	return map[string]string{
		"HOME":                        home,
		"XDG_CONFIG_HOME":             filepath.Join(home, ".config"),
		"XDG_DATA_HOME":               filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":              filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":              filepath.Join(home, ".local", "state"),
		"OPENCODE_CONFIG_CONTENT":     string(cfg),
		"OPENCODE_DISABLE_AUTOUPDATE": "1",
		"ANTHROPIC_API_KEY":           "test",
	}
}

// Scenarios for OpenCode, whose tools are named bash, write and read
// (Claude Code's are Bash, Write, Read):
//
//	opencode-bash   a bash tool use running `echo hi`, then a text answer
//	                quoting its output
//	opencode-write  a write of WriteFile, then a text answer
//	opencode-tools  a bash with a long output, a read of a missing file
//	                (an error result), a write, then a text answer
//	opencode-error  every model call fails with 400 invalid_request_error
//	                (OpenCode retries 429 and 5xx answers without end)
const (
	ScenarioOpenCodeBash  = "opencode-bash"
	ScenarioOpenCodeWrite = "opencode-write"
	ScenarioOpenCodeTools = "opencode-tools"
	ScenarioOpenCodeError = "opencode-error"
)

// Values the OpenCode scenarios use.
const (
	OpenCodeWriteFile   = "note.txt"
	OpenCodeWriteAnswer = "Wrote note.txt."
	OpenCodeToolsAnswer = "Looked, failed once, wrote the note."
	OpenCodeErrorText   = "prompt is too long (anthropictest)"
)

func init() {
	builtin[ScenarioOpenCodeError] = func(*Request) Reply {
		return Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: OpenCodeErrorText}
	}
	builtin[ScenarioOpenCodeBash] = func(r *Request) Reply {
		if r.Step() == 0 {
			return Reply{Blocks: []Block{ToolUse("toolu_oc_bash", "bash", map[string]string{"command": "echo hi", "description": "Print hi"})}}
		}
		var out []string
		for _, res := range r.ToolResults() {
			out = append(out, strings.TrimSpace(res.ResultText()))
		}
		return Text("The command printed: " + strings.Join(out, " "))
	}
	builtin[ScenarioOpenCodeWrite] = func(r *Request) Reply {
		if r.Step() == 0 {
			return Reply{Blocks: []Block{ToolUse("toolu_oc_write", "write", map[string]string{
				"filePath": filepath.Join(r.OpenCodeWorkdir(), OpenCodeWriteFile), "content": ToolsNote})}}
		}
		return Text(OpenCodeWriteAnswer)
	}
	builtin[ScenarioOpenCodeTools] = func(r *Request) Reply {
		dir := r.OpenCodeWorkdir()
		switch r.Step() {
		case 0:
			return Reply{Blocks: []Block{TextBlock("Let me look around first."),
				ToolUse("toolu_oc_seq", "bash", map[string]string{"command": "seq 1 20000", "description": "Count"})}}
		case 1:
			return Reply{Blocks: []Block{ToolUse("toolu_oc_missing", "read", map[string]string{"filePath": filepath.Join(dir, "missing.txt")})}}
		case 2:
			return Reply{Blocks: []Block{ToolUse("toolu_oc_write", "write", map[string]string{
				"filePath": filepath.Join(dir, OpenCodeWriteFile), "content": ToolsNote})}}
		}
		return Text(OpenCodeToolsAnswer)
	}
}

// OpenCodeWorkdir is the working directory OpenCode states in its system
// prompt ("Working directory: /path"), or "".
func (r *Request) OpenCodeWorkdir() string { return r.Workdir() }
