package openaitest

import (
	"testing"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// PinnedCodexVersion is the Codex CLI version the recorded fixtures come
// from and `make tools` installs.
const PinnedCodexVersion = "0.171.0"

// defaultCodexBin is where `make tools` installs the pinned CLI, relative
// to the module root.
const defaultCodexBin = ".tools/codex/node_modules/.bin/codex"

// CodexBin returns the path of the real Codex CLI for tests:
// $GOLEM_CODEX_BIN, else the pinned CLI that `make tools` installs in the
// module's .tools folder. When it is missing the test is skipped, or fails
// when GOLEM_REQUIRE_TOOLS=1 (as `make test` sets).
func CodexBin(t testing.TB) string {
	t.Helper()
	return clitest.Bin(t, "the Codex CLI", "GOLEM_CODEX_BIN", defaultCodexBin)
}

// CLIVars returns the variables that point one run of the real Codex CLI,
// through the engine, at baseURL (e.g. Server.BaseURL("bash")) offline:
// HOME and CODEX_HOME (where Codex keeps sessions) are home, the fake API
// key is "test", and OPENAI_BASE_URL is baseURL, which the engine turns
// into a provider on Codex's command line. Give them to an engine as
// Config.Env.
func CLIVars(home, baseURL string) map[string]string {
	return map[string]string{
		"HOME":            home,
		"CODEX_HOME":      home,
		"OPENAI_API_KEY":  "test",
		"OPENAI_BASE_URL": baseURL,
		"RUST_LOG":        "error",
	}
}
