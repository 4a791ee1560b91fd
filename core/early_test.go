package core_test

import (
	"runtime"
	"testing"

	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// TestAnswerBeforeTheAgentExits: the terminal event reaches the stream as
// soon as the CLI prints its result, while the agent still runs (the fake
// lingers after its result as Claude Code does while it writes its
// session); the turn stays in flight with the agent's group until the
// agent is gone, and the conversation's next turn starts only then, resuming
// the saved session.
func TestAnswerBeforeTheAgentExits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	h := newHarness(t, chatLimits, nil)
	first := h.sinkMessage("!text 10\n!linger 1h")
	end := terminal(t, first)
	if end.Type != parser.Done || end.SessionID == "" {
		t.Fatalf("first turn ended %+v, want done with a session", end)
	}
	invs := enginetest.ReadLog(t, h.log)
	if len(invs) != 1 || !alive(invs[0].PID) {
		t.Fatalf("when done arrived: invocations %+v; want the one agent still running", invs)
	}
	turns, err := h.store.InFlightTurns()
	if err != nil || len(turns) != 1 || turns[0].AgentGroup != invs[0].PID {
		t.Fatalf("when done arrived: in flight %+v, %v; want the turn naming agent %d", turns, err, invs[0].PID)
	}

	second := h.sinkMessage("again")
	if end := terminal(t, second); end.Type != parser.Done {
		t.Fatalf("second turn ended %+v", end)
	}
	invs = enginetest.ReadLog(t, h.log)
	if len(invs) != 2 {
		t.Fatalf("%d invocations, want 2", len(invs))
	}
	if got, _ := invs[1].Flag("--resume"); got != end.SessionID {
		t.Errorf("second turn resumed %q, want the first turn's session %q", got, end.SessionID)
	}
	if alive(invs[0].PID) {
		t.Errorf("the first agent (pid %d) still runs after the second turn", invs[0].PID)
	}
}
