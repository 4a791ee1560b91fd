package console

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/golem-chat/golem/internal/bottest"
)

// TestEndToEnd runs `bot run`'s wiring: the console, a real dispatcher and
// the fake agent CLI as Claude Code.
func TestEndToEnd(t *testing.T) {
	b := bottest.New(t, bottest.Options{Trusted: []string{"console"}})
	d := b.Dispatcher

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
