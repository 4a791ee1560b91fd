package console

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/golem-chat/golem/internal/bottest"
)

// TestSessionCommands: `bot run` takes /sessions, /resume and /session as
// typed text, and prints their answers.
func TestSessionCommands(t *testing.T) {
	b := bottest.New(t, bottest.Options{Trusted: []string{"console"}})
	in := "/sessions\n/resume abcd\n/session\n/quit\n"
	var out bytes.Buffer
	c := New(strings.NewReader(in), &out, Options{})
	b.Dispatcher.Register(c)
	if err := c.Start(context.Background(), b.Dispatcher); err != nil {
		t.Fatalf("Start: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"No claude-code sessions in ",
		"No claude-code session of this working directory starts with `abcd`",
		"This conversation has no agent session yet",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
}
