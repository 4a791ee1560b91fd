package engine_test

import (
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/geminitest"
)

// TestGeminiRealSessions: the sessions the real Gemini CLI wrote (against
// the fake API) are listed for their working directory with the prompts
// typed (not the context the CLI sends first), found by prefix from
// another directory, and resumed by `gemini --resume ID`.
func TestGeminiRealSessions(t *testing.T) {
	t.Parallel()
	c := newRealGemini(t)
	e := c.newEngine(t, geminitest.ScenarioText, engine.Config{})
	evs := c.run(t, e, engine.Turn{Prompt: "hello gem\nsecond line"})
	first := evs[len(evs)-1].SessionID
	c.run(t, e, engine.Turn{Prompt: "again gem", SessionID: first})
	evs = c.run(t, e, engine.Turn{Prompt: "elsewhere", Workdir: t.TempDir()})
	other := evs[len(evs)-1].SessionID

	got, err := e.Sessions(c.workdir, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("Sessions: %+v, %v; want the one session of the workdir", got, err)
	}
	if s := got[0]; s.ID != first || s.Prompts != 2 || s.FirstPrompt != "hello gem\nsecond line" {
		t.Errorf("session %+v, want %s with 2 prompts, the first one first", s, first)
	}
	if got, _ := e.SessionsElsewhere(c.workdir, other[:6]); len(got) != 1 || got[0].ID != other || got[0].Workdir == "" {
		t.Errorf("elsewhere: %+v, want %s with its workdir", got, other)
	}
	if cmd := e.ResumeCommand(c.workdir, first); !strings.HasPrefix(cmd, "cd "+c.workdir+" && HOME=") || !strings.HasSuffix(cmd, " --resume "+first) {
		t.Errorf("ResumeCommand = %q", cmd)
	}
}
