package openaitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	bin := os.Getenv("GOLEM_CODEX_BIN")
	if bin == "" {
		bin = filepath.Join(moduleRoot(), defaultCodexBin)
	}
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("GOLEM_REQUIRE_TOOLS") == "1" {
			t.Fatalf("the Codex CLI is required (GOLEM_REQUIRE_TOOLS=1) but %s is not runnable: %v; run `make tools`", bin, err)
		}
		t.Skipf("the Codex CLI is not installed at %s (run `make tools` or set GOLEM_CODEX_BIN): %v", bin, err)
	}
	return bin
}

// moduleRoot is the nearest folder above the working directory holding a
// go.mod ("." when there is none); tests run in their package's folder.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
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
