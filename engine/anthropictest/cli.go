package anthropictest

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// PinnedClaudeVersion is the Claude Code CLI version the recorded fixtures
// come from and `make tools` installs.
const PinnedClaudeVersion = "2.1.197"

// defaultClaudeBin is where `make tools` installs the pinned CLI, relative
// to the module root.
const defaultClaudeBin = ".tools/claude-code/node_modules/.bin/claude"

// ClaudeBin returns the path of the real Claude Code CLI for tests:
// $GOLEM_CLAUDE_BIN, else the pinned CLI that `make tools` installs in the
// module's .tools folder. When it is missing the test is skipped, or fails
// when GOLEM_REQUIRE_TOOLS=1 (as `make test` sets).
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return clitest.Bin(t, "the Claude Code CLI", "GOLEM_CLAUDE_BIN", defaultClaudeBin)
}

// CLIVars returns the variables that point one run of the real CLI at
// baseURL (e.g. Server.BaseURL("bash")) offline, with home as HOME:
// IS_SANDBOX=1 (--dangerously-skip-permissions is refused to root without
// it), the fake API key "test", no telemetry, no auto-update, no
// non-essential traffic, and CLAUDE_CODE_MAX_RETRIES=2 so that API errors
// end a run in about two seconds instead of minutes. Give them to an
// engine as Config.Env.
func CLIVars(home, baseURL string) map[string]string {
	return map[string]string{
		"HOME":                home,
		"IS_SANDBOX":          "1",
		"ANTHROPIC_BASE_URL":  baseURL,
		"ANTHROPIC_API_KEY":   "test",
		"DISABLE_TELEMETRY":   "1",
		"DISABLE_AUTOUPDATER": "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"CLAUDE_CODE_MAX_RETRIES":                  "2",
	}
}

// CLIEnv is a whole environment for running the CLI directly: the test
// process's environment without HOME, ANTHROPIC_*, CLAUDE* and DISABLE_*
// (so nothing of a developer's own setup leaks in), plus CLIVars.
func CLIEnv(home, baseURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "IS_SANDBOX",
			strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "CLAUDE"),
			strings.HasPrefix(name, "DISABLE_"):
			continue
		}
		env = append(env, kv)
	}
	vars := CLIVars(home, baseURL)
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		env = append(env, name+"="+vars[name])
	}
	return env
}
