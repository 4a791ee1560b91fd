package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
)

// BenchmarkClaudeSessions is /sessions' listing over 1,000 Claude Code
// session files of 10 MB each (a prompt, then assistant lines and 8 KB
// tool results, in the CLI's shapes): cold is a golem that never read them
// (the 10 newest are read whole: 100 MB), warm one that listed them before
// (a stat each).
func BenchmarkClaudeSessions(b *testing.B) {
	config := filepath.Join(b.TempDir(), "claude")
	workdir := b.TempDir()
	dir := filepath.Join(config, "projects", engine.ClaudeProjectName(workdir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var body strings.Builder
	body.WriteString(`{"type":"user","message":{"role":"user","content":"fix the flaky test"},"cwd":"` + workdir + "\"}\n")
	result := strings.Repeat("x", 8<<10)
	for body.Len() < 10<<20 {
		body.WriteString(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a.go"}}]}}` + "\n")
		body.WriteString(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"` + result + `"}]}}` + "\n")
	}
	content := []byte(body.String())
	now := time.Now()
	for i := range 1000 {
		path := filepath.Join(dir, fmt.Sprintf("%08x-0000-4000-8000-000000000000.jsonl", i))
		if err := os.WriteFile(path, content, 0o600); err != nil {
			b.Fatal(err)
		}
		mtime := now.Add(-time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			b.Fatal(err)
		}
	}
	e := engine.NewClaudeCode(engine.Config{Env: map[string]string{"CLAUDE_CONFIG_DIR": config}})
	list := func(b *testing.B) {
		got, err := e.Sessions(workdir, 10)
		if err != nil || len(got) != 1000 || got[0].Prompts != 1 || got[9].FirstPrompt != "fix the flaky test" {
			b.Fatalf("Sessions: %d sessions, %v", len(got), err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			engine.ForgetSummaries()
			b.StartTimer()
			list(b)
		}
	})
	b.Run("warm", func(b *testing.B) {
		list(b)
		for b.Loop() {
			list(b)
		}
	})
}
