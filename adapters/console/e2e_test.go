package console

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/store"
)

// TestEndToEnd runs `bot run`'s wiring: the console, a real dispatcher and
// the fake agent CLI as Claude Code.
func TestEndToEnd(t *testing.T) {
	bin := enginetest.Build(t)
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "golem.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := core.NewDispatcher(core.Options{
		Engines:       map[string]engine.Engine{"claude-code": engine.NewClaudeCode(engine.Config{Command: bin, Logger: log})},
		DefaultEngine: "claude-code",
		Store:         st,
		Workspace:     dir,
		Trusted:       []string{"console"},
		Logger:        log,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("dispatcher Close: %v", err)
		}
	}()

	in := "hello console\n!tool Bash {\"command\":\"go test ./...\"}\\\nran the tests\n/status\n/quit\n"
	var out bytes.Buffer
	c := New(strings.NewReader(in), &out, Options{})
	d.Register(c)
	if err := c.Start(context.Background(), d); err != nil {
		t.Fatalf("Start: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"> echo: hello console\n\n> ",
		"> . 🔧 Bash — go test ./...\necho: ran the tests\n\n> ",
		"claude-code",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "> "); n != 4 {
		t.Errorf("%d prompts, want 4:\n%s", n, got)
	}
}
