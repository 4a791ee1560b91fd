package geminitest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/golem-chat/golem/engine/internal/clitest"
)

// PinnedGeminiVersion is the Gemini CLI version the recorded fixtures come
// from and `make tools` installs.
const PinnedGeminiVersion = "0.61.0"

// defaultGeminiBin is where `make tools` installs the pinned CLI, relative
// to the module root.
const defaultGeminiBin = ".tools/gemini-cli/node_modules/.bin/gemini"

// GeminiBin returns the path of the real Gemini CLI for tests:
// $GOLEM_GEMINI_BIN, else the pinned CLI that `make tools` installs in the
// module's .tools folder. When it is missing the test is skipped, or fails
// when GOLEM_REQUIRE_TOOLS=1 (as `make test` sets).
func GeminiBin(t testing.TB) string {
	t.Helper()
	return clitest.Bin(t, "the Gemini CLI", "GOLEM_GEMINI_BIN", defaultGeminiBin)
}

// settings is the home's ~/.gemini/settings.json: API-key auth (which the
// CLI does not infer once GOOGLE_GEMINI_BASE_URL is set), no usage
// statistics, telemetry or update checks.
const settings = `{"security":{"auth":{"selectedType":"gemini-api-key"}},` +
	`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},` +
	`"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false}}` + "\n"

// CLIVars writes home's .gemini/settings.json and returns the variables
// that point one run of the real Gemini CLI at baseURL (e.g.
// Server.BaseURL("bash")) offline, with home as HOME and the fake API key
// "test". Give them to an engine as Config.Env.
func CLIVars(t testing.TB, home, baseURL string) map[string]string {
	t.Helper()
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"HOME":                   home,
		"GEMINI_API_KEY":         "test",
		"GOOGLE_GEMINI_BASE_URL": baseURL,
		"NO_COLOR":               "1",
	}
}
