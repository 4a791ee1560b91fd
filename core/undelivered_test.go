package core_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
)

// A message acknowledged as added to the answer always gets an answer:
// when the answer is stopped before the agent read it, it is told so
// plainly, and it does not run.
func TestSteeredMessageUnreadAtStopIsToldSo(t *testing.T) {
	h := busyHarness(t, core.BusySteer)
	h.say("alice", "!text 20\n!sleep 5s\nfinal") // it reads steered messages after the sleep
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "also this")
	h.rec.waitText("(noted")
	h.say("alice", "/stop")
	h.rec.waitText("Not delivered: the answer was stopped before the agent read this message")
	h.stop()
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 1 {
		t.Errorf("the agent ran %d times, want once: a stopped message does not run", len(inv))
	}
}

// One the agent had not read when its answer ran out of time runs as a
// turn of its own.
func TestSteeredMessageUnreadAtTimeoutRunsAfter(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Busy = core.BusySteer
		o.Timeout = 1500 * time.Millisecond
	})
	h.say("alice", "!text 20\n!sleep 10s\nfinal")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "also this")
	h.rec.waitText("(noted")
	h.rec.waitText("echo: also this")
	h.stop()
	texts := h.rec.texts()
	if !strings.Contains(texts[0], "Timed out") {
		t.Errorf("the first answer %q did not time out", texts[0])
	}
	inv := enginetest.ReadLog(t, h.log)
	if len(inv) != 2 || inv[1].Prompt != "also this" {
		t.Errorf("the agent ran %d times (%+v), want the unread message run on its own", len(inv), inv)
	}
}

// Several quick messages under busy: interrupt interrupt in turn: one that
// a newer one follows before it started is told it stopped for the newer
// message, and only the newest runs.
func TestBusyInterruptsInTurn(t *testing.T) {
	h := busyHarness(t, core.BusyInterrupt)
	h.say("alice", "!text 20\n!hang")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "second")
	h.say("alice", "third")
	h.rec.waitText("echo: third")
	h.stop()
	texts := h.rec.texts()
	if strings.Contains(strings.Join(texts, "\n"), "echo: second") {
		t.Errorf("second ran although third interrupted it: %q", texts)
	}
	if n := strings.Count(strings.Join(texts, "\n"), "Stopped for the newer message"); n != 2 {
		t.Errorf("%d answers say they stopped for the newer message, want 2 (first and second): %q", n, texts)
	}
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 2 {
		t.Errorf("the agent ran %d times, want twice (first, third)", len(inv))
	}
}

// Messages a run could not take go back to the queue without passing its
// bound: the newest past it are told they were not run.
func TestMessagesPutBackKeepTheQueueBound(t *testing.T) {
	eng := &unsteerable{release: make(chan struct{})}
	steering := logWatch{msg: "message not steered; queued for a turn of its own", seen: make(chan struct{}),
		once: &sync.Once{}, hold: make(chan struct{})}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"claude-code": eng}
		o.Logger = slog.New(steering)
		o.QueueDepth = 1
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first")
	h.say("alice", "second")
	steering.wait(t)         // its steer failed; it is not back in the queue yet
	h.say("alice", "third")  // handed to the run in its place
	h.say("alice", "fourth") // waits: the run has one in hand
	close(steering.hold)
	h.rec.waitFor("two told they were not run", func(texts []string) bool {
		return strings.Count(strings.Join(texts, "\n"), "Not run: too many messages are waiting") == 2
	})
	close(eng.release)
	h.rec.waitText("echo: second")
	h.stop()
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if len(eng.prompts) != 2 || eng.prompts[1] != "second" {
		t.Errorf("the agent was asked %q, want first, then second (queue_depth 1)", eng.prompts)
	}
}

// Under busy: interrupt a message past its budget stops nothing: not the
// running answer, and not a message waiting behind it (found by review:
// the waiting one was interrupted in turn by the refused one).
func TestOverBudgetMessageDoesNotInterruptTheWaitingOne(t *testing.T) {
	clk := newClock(time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Now = clk.now
		o.Busy = core.BusyInterrupt
		o.Allow = []string{"rec:alice", "rec:bob"}
		o.Budgets = core.Budgets{DailyUSDPerUser: 0.001}
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first") // alice is past her budget now
	h.say("bob", "!text 20\n!hang")
	h.rec.waitFor("bob's answer's start", func(texts []string) bool { return len(texts) == 2 && len(texts[1]) >= 20 })
	h.say("bob", "second")      // interrupts bob's answer, waits for it to end
	h.say("alice", "also this") // past her budget: refused, stops nothing
	h.rec.waitText("daily budget is $0.0010")
	h.rec.waitText("echo: second")
	h.stop()
	if n := strings.Count(h.rec.all(), "Stopped for the newer message"); n != 1 {
		t.Errorf("%d answers stopped for a newer message, want 1 (bob's first):\n%s", n, h.rec.all())
	}
}

// A /stop while the next turn waits for the previous agent to exit ends
// that turn stopped, not with the engine's "context canceled" (found by
// review).
func TestStopWhileWaitingForTheLastAgentSaysStopped(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.Context = core.ContextLimits{MaxMessages: 20, MaxChars: 8000} })
	h.stop()
	src := &timedHistorian{recorder: h.rec}
	h.startWith(src)
	h.say("alice", "!linger 1h\nfirst") // the engine stops it 2 s after its result
	h.rec.waitText("echo: first")
	h.say("alice", "second")
	h.rec.waitFor("the second turn preparing", func([]string) bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.at) == 2
	})
	h.say("alice", "/stop")
	h.rec.waitText("⏹️ _Stopped._")
	h.stop()
	if all := h.rec.all(); strings.Contains(all, "context canceled") || strings.Contains(all, "Error") {
		t.Errorf("the stopped turn read as an engine error:\n%s", all)
	}
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 1 {
		t.Errorf("the agent ran %d times, want once: the stopped turn starts none", len(inv))
	}
}
