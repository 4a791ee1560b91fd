package core_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

var chatLimits = core.Limits{MaxLen: 500, MinEditInterval: 100 * time.Millisecond, MinPostInterval: 50 * time.Millisecond}

func TestAnswerStreamsByEdits(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!delta-rate 2ms 300")
	h.rec.waitFor("the final answer", func(texts []string) bool {
		return len(texts) == 1 && len(texts[0]) == 300
	})
	h.stop()
	if got := h.rec.texts()[0]; got != strings.Repeat("x", 300) {
		t.Errorf("final text = %q, want 300 x", got)
	}
	h.rec.mu.Lock()
	edits := h.rec.edits
	h.rec.mu.Unlock()
	if edits < 2 {
		t.Errorf("want the answer to grow by several edits, got %d", edits)
	}
	h.rec.checkViolations()
}

func TestLongAnswerContinuesWithFencesIntact(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!fence")
	h.rec.waitText("a test for it as well.")
	h.stop()
	texts := h.rec.texts()
	if len(texts) < 2 {
		t.Fatalf("a %d-rune limit did not continue the answer in a new message: %d messages", chatLimits.MaxLen, len(texts))
	}
	for i, text := range texts {
		if strings.Count(text, "```")%2 != 0 {
			t.Errorf("message %d leaves a code fence open:\n%s", i, text)
		}
	}
	h.rec.checkViolations()
}

func TestToolActivityInTheAnswersThread(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!tool Bash {\"command\":\"go test ./...\"}\n!tool Read {\"file_path\":\"core/dispatch.go\"}\nall green")
	h.rec.waitText("echo: all green")
	h.stop()
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	var lines []string
	for _, a := range h.rec.activity {
		if a.answer.ID != h.rec.order[0] {
			t.Errorf("activity posted under %q, not the answer %q", a.answer.ID, h.rec.order[0])
		}
		lines = append(lines, strings.Split(a.text, "\n")...)
	}
	want := []string{"🔧 **Bash** — `go test ./...`", "📖 **Read** — `core/dispatch.go`"}
	if !slices.Equal(lines, want) {
		t.Errorf("activity = %q, want %q", lines, want)
	}
}

func TestStopKillsTheAgent(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!text 30\n!hang")
	h.rec.waitFor("the partial answer", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) == 30 })
	partial := h.rec.texts()[0]
	child := waitChild(t, h.log)
	h.say("alice", "/stop")
	h.rec.waitText("Stopped.")
	if got := h.rec.texts()[0]; got != partial+"\n\n⏹️ _Stopped._" {
		t.Errorf("the stopped answer = %q, want the partial answer %q marked stopped", got, partial)
	}
	waitGone(t, child)
	h.say("alice", "/stop")
	h.rec.waitText("Nothing is running.")
}

func TestTimeoutStopsTheAgent(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.Timeout = 500 * time.Millisecond })
	h.say("alice", "!hang")
	h.rec.waitText("Timed out after 500ms")
	waitGone(t, waitChild(t, h.log))
}

func TestQueueOverflowIsTold(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.QueueDepth, o.Busy = 1, core.BusyQueue })
	h.say("alice", "!hang")
	waitChild(t, h.log)
	h.say("alice", "second")
	h.say("alice", "third")
	h.rec.waitText("1 messages are waiting")
	h.say("alice", "/stop")
	h.rec.waitText("1 waiting messages dropped")
}

func TestUnauthorizedUserIsRefusedOnce(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("mallory", "rm -rf /")
	h.say("mallory", "please")
	h.rec.waitText("not allowed")
	h.say("alice", "hi")
	h.rec.waitText("echo: hi")
	h.stop()
	if n := strings.Count(h.rec.all(), "not allowed"); n != 1 {
		t.Errorf("refused %d times, want once", n)
	}
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 1 {
		t.Errorf("the agent ran %d times, want once (for alice)", len(inv))
	}
}

func TestEngineCrashThenNextTurnWorks(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!crash 3")
	h.rec.waitText("Error")
	if all := h.rec.all(); !strings.Contains(all, "3") {
		t.Errorf("the crash message lacks the exit code: %q", all)
	}
	h.say("alice", "again")
	h.rec.waitText("echo: again")
}

// TestCLIErrorWordedLikeAnOutcome: a CLI whose own error message is
// "stopped" or "timed out" failed; the answer says so, not that it was
// stopped or timed out.
func TestCLIErrorWordedLikeAnOutcome(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!error stopped")
	h.rec.waitText("⚠️ **Error:** stopped")
	h.say("alice", "!error timed out")
	h.rec.waitText("⚠️ **Error:** timed out")
	h.stop()
	if all := h.rec.all(); strings.Contains(all, "Stopped.") || strings.Contains(all, "Timed out after") {
		t.Errorf("a CLI error was shown as golem's stop or timeout:\n%s", all)
	}
	h.start()
	q := h.sinkMessage("!error stopped")
	if ev := terminal(t, q); ev.Type != parser.Error || ev.Message != "stopped" || ev.Reason != parser.Failed {
		t.Errorf("the stream ended with %+v, want the CLI's error \"stopped\" (reason Failed)", ev)
	}
}

func TestRedeliveredEventIsAnsweredOnce(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	m := core.Message{Platform: "rec", Channel: "C1", User: "alice", Text: "once", ID: "x1", EventID: "ev-1"}
	h.d.Handle(context.Background(), m)
	h.d.Handle(context.Background(), m)
	h.rec.waitText("echo: once")
	h.stop()
	h.start() // a restart must not answer it again either
	h.d.Handle(context.Background(), m)
	h.say("alice", "next")
	h.rec.waitText("echo: next")
	if n := strings.Count(h.rec.all(), "echo: once"); n != 1 {
		t.Errorf("answered %d times", n)
	}
}

func TestRestartResumesSessionAndNoticesInterruptedTurn(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "remember me")
	h.rec.waitText("echo: remember me")
	h.say("alice", "!text 10\n!hang")
	h.rec.waitFor("the partial answer", func(texts []string) bool { return len(texts) == 2 && len(texts[1]) == 10 })
	child := waitChild(t, h.log)
	// The answer is on the platform before its record names it: wait for
	// the record, as a crash after it would find it.
	for deadline := time.Now().Add(20 * time.Second); ; {
		turns, err := h.store.InFlightTurns()
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) == 1 && turns[0].AnswerID != "" && turns[0].AgentGroup != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn in flight never recorded its answer and agent: %+v", turns)
		}
		time.Sleep(10 * time.Millisecond) // a store write on the turn's goroutine: nothing to wait on
	}
	// A crash: the process dies with the turn in flight. Closing the store
	// under the running turn leaves its record as a crash would.
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.d.Close(ctx)
	waitGone(t, child)

	h.start()
	h.rec.waitFor("the interrupted notice", func([]string) bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		for _, a := range h.rec.activity {
			if strings.Contains(a.text, "restarted while answering") {
				return true
			}
		}
		return false
	})
	h.say("alice", "still there?")
	h.rec.waitText("echo: still there?")
	inv := enginetest.ReadLog(t, h.log)
	first, last := inv[0], inv[len(inv)-1]
	if id, ok := last.Flag("--resume"); !ok || id != first.SessionID {
		t.Errorf("after restart: --resume %q (present %v), want the stored session %q", id, ok, first.SessionID)
	}
	if err := h.d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if turns, err := h.store.InFlightTurns(); err != nil || len(turns) != 0 {
		t.Errorf("in-flight turns left: %v %v", turns, err)
	}
}

func TestNewForgetsTheSession(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "one")
	h.rec.waitText("echo: one")
	h.say("alice", "two")
	h.rec.waitText("echo: two")
	h.say("alice", "/new")
	h.rec.waitText("Session forgotten")
	h.say("alice", "three")
	h.rec.waitText("echo: three")
	inv := enginetest.ReadLog(t, h.log)
	if id, _ := inv[1].Flag("--resume"); id != inv[0].SessionID {
		t.Errorf("second turn did not resume: %q", inv[1].Argv)
	}
	if inv[2].Has("--resume") {
		t.Errorf("after /new the turn resumed: %q", inv[2].Argv)
	}
}

func TestStatusAndModel(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "/model opus")
	h.rec.waitText("Model set to **opus**")
	h.say("alice", "hi")
	h.rec.waitText("echo: hi")
	h.say("alice", "/status")
	h.rec.waitText("**Engine:** claude-code")
	inv := enginetest.ReadLog(t, h.log)
	if m, _ := inv[0].Flag("--model"); m != "opus" {
		t.Errorf("--model = %q", m)
	}
	if want := "**Session:** `" + inv[0].SessionID + "`"; !strings.Contains(h.rec.all(), want) {
		t.Errorf("status lacks %q: %q", want, h.rec.all())
	}
}

// waitChild waits until the fake agent logged the pid of its !hang child.
func waitChild(t *testing.T, log string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(log); err == nil {
			inv := enginetest.ReadLog(t, log)
			if n := len(inv); n > 0 && inv[n-1].ChildPID != 0 {
				return inv[n-1].ChildPID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the fake agent never started its child")
	return 0
}

// waitGone waits until pid no longer exists.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChannelOverride(t *testing.T) {
	workdir := t.TempDir()
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Channels = map[string]core.Override{"rec:C1": {Model: "haiku", Workdir: workdir}}
	})
	h.say("alice", "hi")
	h.rec.waitText("echo: hi")
	inv := enginetest.ReadLog(t, h.log)
	if m, _ := inv[0].Flag("--model"); m != "haiku" || inv[0].Cwd != workdir {
		t.Errorf("the channel override did not apply: --model %q in %q", m, inv[0].Cwd)
	}
	h.say("alice", "/model sonnet")
	h.rec.waitText("Model set to **sonnet**")
	h.say("alice", "again")
	h.rec.waitText("echo: again")
	inv = enginetest.ReadLog(t, h.log)
	if m, _ := inv[1].Flag("--model"); m != "sonnet" {
		t.Errorf("/model did not win over the channel's model: %q", m)
	}
}

// sinkMessage is a message whose events go to a queue, as the HTTP API
// and the terminal chat send them.
func (h *harness) sinkMessage(text string) *core.EventQueue {
	q := core.NewEventQueue()
	n := strconv.FormatInt(msgSeq.Add(1), 10)
	h.d.Handle(context.Background(), core.Message{
		Platform: "rec", Channel: "C1", User: "alice", Text: text, ID: "m" + n, Sink: q.Push,
	})
	return q
}

// terminal waits for q's terminal event.
func terminal(t *testing.T, q *core.EventQueue) parser.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		for _, ev := range q.Take() {
			if ev.Terminal() {
				return ev
			}
		}
		select {
		case <-q.Ready():
		case <-deadline:
			t.Fatal("no terminal event")
		}
	}
}

func TestStopEndsTheStreamsOfDroppedMessages(t *testing.T) {
	h := newHarness(t, chatLimits, queueBusy)
	h.say("alice", "!hang")
	waitChild(t, h.log)
	waiting := h.sinkMessage("second")
	h.say("alice", "/stop")
	if ev := terminal(t, waiting); ev.Type != parser.Error || ev.Message != "stopped" || ev.Reason != parser.Stopped {
		t.Errorf("the dropped message's stream ended with %+v, want the error \"stopped\"", ev)
	}
}

func TestEmptyMessageEndsItsStream(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	if ev := terminal(t, h.sinkMessage(" \n ")); ev.Type != parser.Error {
		t.Errorf("an empty message's stream ended with %+v, want an error", ev)
	}
}

func TestCloseAnswersWaitingMessagesBeforeReturning(t *testing.T) {
	h := newHarness(t, chatLimits, queueBusy)
	h.say("alice", "!hang")
	waitChild(t, h.log)
	waiting := h.sinkMessage("second")
	h.say("alice", "/status")
	h.rec.waitText("1 waiting")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop the running turn at once
	if err := h.d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := waiting.Take()
	if len(got) != 1 || got[0].Type != parser.Error || got[0].Reason != parser.Interrupted || !strings.Contains(got[0].Message, "shutting down") {
		t.Errorf("when Close returned the waiting message had %+v, want the shutdown notice (reason interrupted)", got)
	}
}

func TestModelChangedDuringATurnIsKept(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!text 10\n!sleep 2s\nfinished")
	h.rec.waitFor("the partial answer", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) == 10 })
	h.say("alice", "/model opus") // answered at once, while the turn runs
	h.rec.waitText("finished")
	// The answer shows before the turn has saved its session: ask until
	// the conversation is idle, then look.
	var status string
	for n := 1; !strings.Contains(status, "**State:** idle"); n++ {
		h.say("alice", "/status")
		h.rec.waitFor("a /status answer", func(texts []string) bool {
			return strings.Count(strings.Join(texts, "\n"), "**State:**") == n
		})
		texts := h.rec.texts()
		status = texts[len(texts)-1]
	}
	if !strings.Contains(status, "**Model:** opus") || strings.Contains(status, "**Session:** none") {
		t.Errorf("the turn's end undid /model or lost its session: %q", status)
	}
}
