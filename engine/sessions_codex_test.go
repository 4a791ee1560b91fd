package engine_test

import (
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/openaitest"
)

// TestCodexRealSessions: the sessions the real Codex CLI wrote (against the
// fake Responses API) are listed for their working directory with the
// prompts typed (not the context Codex adds as user messages), found by
// prefix from another directory, and resumed by `codex resume ID`.
func TestCodexRealSessions(t *testing.T) {
	t.Parallel()
	c := newRealCodex(t)
	e := c.newEngine(openaitest.ScenarioText, engine.Config{})
	first := codexDone(t, c.run(t, e, engine.Turn{Prompt: "My name is Ada.\nsecond line"}))
	c.run(t, e, engine.Turn{Prompt: "What is my name?", SessionID: first.SessionID})
	other := codexDone(t, c.run(t, e, engine.Turn{Prompt: "elsewhere", Workdir: t.TempDir()}))

	got, err := e.Sessions(c.workdir, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("Sessions: %+v, %v; want the one session of the workdir", got, err)
	}
	if s := got[0]; s.ID != first.SessionID || s.Prompts != 2 || s.FirstPrompt != "My name is Ada.\nsecond line" {
		t.Errorf("session %+v, want %s with 2 prompts, the first one first", s, first.SessionID)
	}
	if got, _ := e.SessionsElsewhere(c.workdir, other.SessionID); len(got) != 1 || got[0].ID != other.SessionID || got[0].Workdir == "" {
		t.Errorf("elsewhere: %+v, want %s with its workdir", got, other.SessionID)
	}
	if got, _ := e.SessionsElsewhere(c.workdir, first.SessionID); len(got) != 0 {
		t.Errorf("elsewhere found this workdir's own session: %+v", got)
	}
	if cmd := e.ResumeCommand(c.workdir, first.SessionID); !strings.HasSuffix(cmd, " "+c.bin+" resume "+first.SessionID) ||
		!strings.HasPrefix(cmd, "cd "+c.workdir+" && CODEX_HOME=") {
		t.Errorf("ResumeCommand = %q", cmd)
	}
}
