package bottest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
)

// RecordedSession is a session recorded from the real Claude Code CLI
// (engine/testdata/sessions/claude), whose prompts are "first
// prompt\nsecond line" and "again please".
const RecordedSession = "db2e0271-741d-4048-9b12-17b602c68216"

// LayClaudeSession writes RecordedSession, as Claude Code lays its
// sessions out, into configDir (the engine's CLAUDE_CONFIG_DIR: give it
// in Options.AgentEnv) as a session of workdir, last written an hour ago.
func LayClaudeSession(t testing.TB, configDir, workdir string) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "../../engine/testdata/sessions/claude", RecordedSession+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(configDir, "projects", engine.ClaudeProjectName(workdir))
	path := filepath.Join(dir, RecordedSession+".jsonl")
	raw = bytes.ReplaceAll(raw, []byte("/WORKDIR"), []byte(workdir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, then, then); err != nil {
		t.Fatal(err)
	}
}
