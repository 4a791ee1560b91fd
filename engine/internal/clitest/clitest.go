// Package clitest holds what the fake model APIs of the real-CLI tests
// (engine/anthropictest, engine/openaitest, engine/geminitest) share:
// finding the pinned CLI that `make tools` installs, their scenarios and
// requests (Scenarios), and cutting an answer
// into the pieces a model streams.
package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Bin returns the path of a real CLI for tests: $envVar, else rel (where
// `make tools` installs the pinned CLI) below the module root. When it is
// missing the test is skipped, or fails when GOLEM_REQUIRE_TOOLS=1 (as
// `make test` sets). name names the CLI in the messages ("the Codex CLI").
func Bin(t testing.TB, name, envVar, rel string) string {
	t.Helper()
	bin := os.Getenv(envVar)
	if bin == "" {
		bin = filepath.Join(ModuleRoot(), rel)
	}
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("GOLEM_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s is required (GOLEM_REQUIRE_TOOLS=1) but %s is not runnable: %v; run `make tools`", name, bin, err)
		}
		t.Skipf("%s is not installed at %s (run `make tools` or set %s): %v", name, bin, envVar, err)
	}
	return bin
}

// ModuleRoot is the nearest folder above the working directory holding a
// go.mod ("." when there is none); tests run in their package's folder.
func ModuleRoot() string {
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

// Chunks splits s into pieces of a few words, as a model streams them,
// never inside a UTF-8 sequence; "" has none.
func Chunks(s string) []string {
	var out []string
	for len(s) > 0 {
		n := 12
		if n >= len(s) {
			out = append(out, s)
			break
		}
		// Cut after a space near n when there is one.
		if i := strings.IndexByte(s[n:], ' '); i >= 0 && i < 8 {
			n += i + 1
		}
		for n < len(s) && s[n]&0xC0 == 0x80 {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
