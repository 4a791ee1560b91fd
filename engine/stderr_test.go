package engine_test

import (
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// TestCrashStderrIsRedacted checks that a failed CLI's stderr, which the
// terminal error shows in the chat, has its keys and tokens replaced.
func TestCrashStderrIsRedacted(t *testing.T) {
	const key = "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, _ := fake(t, name, engine.Config{})
			events := runTurn(t, e, engine.Turn{Prompt: "!stderr bad key ANTHROPIC_API_KEY=" + key + " for xoxb-1234567890-AbCdEfGhIjKl\n!no-result"})
			end := lastEvent(events)
			if end.Type != parser.Error {
				t.Fatalf("terminal = %+v, want an error", end)
			}
			for _, secret := range []string{key[10:], "AbCdEfGhIjKl"} {
				if strings.Contains(end.Message, secret) {
					t.Errorf("the error shows a secret: %q", end.Message)
				}
			}
			if want := "stderr: bad key ANTHROPIC_API_KEY=[redacted] for [redacted]"; !strings.Contains(end.Message, want) {
				t.Errorf("error %q does not say %q", end.Message, want)
			}
		})
	}
}

// TestCLIErrorIsRedacted: the CLI's own error (an is_error result) reaches
// the chat too, and an API error can echo the key it was given.
func TestCLIErrorIsRedacted(t *testing.T) {
	const key = "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, _ := fake(t, name, engine.Config{})
			end := lastEvent(runTurn(t, e, engine.Turn{Prompt: "!error invalid x-api-key: " + key}))
			if end.Type != parser.Error || end.Reason != parser.Failed {
				t.Fatalf("terminal = %+v, want the CLI's own error", end)
			}
			if strings.Contains(end.Message, key[10:]) || !strings.Contains(end.Message, "invalid x-api-key: [redacted]") {
				t.Errorf("error %q, want the key redacted and the rest kept", end.Message)
			}
		})
	}
}
