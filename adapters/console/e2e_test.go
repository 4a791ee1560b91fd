package console

import (
	"bytes"
	"context"
	"io"
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

// TestApprovalPrompt: `bot run` asks allow? [y]es · [s]ession · [n]o for a
// permission request and answers with what is typed at it.
func TestApprovalPrompt(t *testing.T) {
	b := bottest.New(t, bottest.Options{Trusted: []string{"console"}})
	d := b.Dispatcher
	in, typed := io.Pipe()
	out := &syncBuffer{}
	c := New(in, out, Options{})
	d.Register(c)
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background(), d) }()
	io.WriteString(typed, "!ask Write {\"file_path\":\"a.txt\",\"content\":\"x\"}\\\nwritten\n")
	out.waitFor(t, "allow? [y]es · [s]ession · [n]o ")
	io.WriteString(typed, "maybe\ny\n")
	out.waitFor(t, "echo: written")
	io.WriteString(typed, "/quit\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"🔐 the agent asks: ", "Write", "✅ Write allowed by"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "allow? [y]es"); n != 2 {
		t.Errorf("asked %d times, want twice (\"maybe\" is no answer):\n%s", n, got)
	}
}
