package core_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// The fake agent (as Claude Code) answers a message steered in between two
// of its steps with "heard: TEXT", and one that came too late for its
// turn with a turn of its own ("echo: TEXT"); `!await` holds a turn until
// a message is steered in (see enginetest).

// acker is the recorder with reactions: it records what it acknowledged.
type acker struct {
	*recorder
	mu    sync.Mutex
	acked []string // message ids
}

func (a *acker) Acknowledge(_ context.Context, m core.Message) error {
	a.mu.Lock()
	a.acked = append(a.acked, m.ID)
	a.mu.Unlock()
	a.notify()
	return nil
}

func (a *acker) ackedIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.acked...)
}

// queueBusy is busy: queue, for tests of messages that wait behind a
// running turn (the default steers them into it).
func queueBusy(o *core.Options) { o.Busy = core.BusyQueue }

func busyHarness(t *testing.T, busy core.Busy) *harness {
	return newHarness(t, chatLimits, func(o *core.Options) {
		o.Busy = busy
		o.Allow = []string{"rec:alice", "rec:bob"}
	})
}

// A message sent while the answer runs goes into it: the agent hears it
// before its next step, the one answer carries both, the agent ran once,
// and the chat (without reactions) gets the short "(noted)" answer.
func TestBusySteerMidTurn(t *testing.T) {
	for _, busy := range []core.Busy{core.BusyDefault, core.BusySteer} {
		t.Run("busy="+string(busy), func(t *testing.T) {
			h := busyHarness(t, busy)
			h.say("alice", "!text 20\n!await\nfinal")
			h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
			h.say("alice", "also this")
			h.rec.waitText("echo: final")
			h.rec.waitText("(noted")
			h.stop()
			texts := h.rec.texts()
			if len(texts) != 2 || !strings.Contains(texts[0], "heard: also this") || !strings.HasSuffix(texts[0], "echo: final") {
				t.Errorf("messages %q, want one answer that heard the steered message, then the note", texts)
			}
			if !strings.Contains(texts[len(texts)-1], "(noted") {
				t.Errorf("the steered message was not acknowledged: %q", texts)
			}
			if inv := enginetest.ReadLog(t, h.log); len(inv) != 1 {
				t.Errorf("the agent ran %d times, want once", len(inv))
			}
		})
	}
}

// Steered during the answer's last step, the message is answered right
// after it, in the same answer message; a poster with reactions
// acknowledges it instead of posting a note. Someone else's message says
// whose it is.
func TestBusySteerAfterTheLastStep(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.Allow = []string{"rec:alice", "rec:bob"} })
	h.stop()
	a := &acker{recorder: newRecorder(t, chatLimits)}
	h.rec = a.recorder
	h.startWith(a)
	h.say("alice", "!text 20\n!await")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("bob", "second")
	h.rec.waitText("echo: (from bob) second")
	h.stop()
	if texts := h.rec.texts(); len(texts) != 1 {
		t.Errorf("messages %q, want the one answer and no note", texts)
	}
	if got := a.ackedIDs(); len(got) != 1 {
		t.Errorf("acknowledged %q, want the steered message", got)
	}
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 1 {
		t.Errorf("the agent ran %d times, want once", len(inv))
	}
}

// Commands are never steered: /status is answered at once, shows the
// message steered in, and the agent never hears of it.
func TestBusySteerLeavesCommandsAlone(t *testing.T) {
	h := busyHarness(t, core.BusySteer)
	h.say("alice", "!text 20\n!await\n!await\nfinal")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "one")
	h.rec.waitText("heard: one")
	h.say("alice", "/status")
	h.rec.waitText("messages steered into it: 1")
	h.say("alice", "two")
	h.rec.waitText("echo: final")
	h.stop()
	if all := h.rec.all(); strings.Contains(all, "heard: /status") {
		t.Errorf("the command went to the agent: %q", h.rec.texts())
	}
}

// A stream (the HTTP API) steered into the answer gets the note and done;
// the answer goes on the running turn's stream.
func TestBusySteerStream(t *testing.T) {
	h := busyHarness(t, core.BusyDefault)
	first := h.sinkMessage("!text 20\n!await\nfinal")
	var got []parser.Event
	for len(got) == 0 || got[0].Type != parser.Text {
		<-first.Ready()
		got = append(got, first.Take()...)
	}
	steered := h.sinkMessage("from the stream")
	var note []parser.Event
	for len(note) == 0 || !note[len(note)-1].Terminal() {
		<-steered.Ready()
		note = append(note, steered.Take()...)
	}
	if len(note) != 2 || note[0].Type != parser.Text || !strings.Contains(note[0].Content, "(noted") || note[1].Type != parser.Done {
		t.Errorf("the steered stream got %+v, want the note and done", note)
	}
	var text strings.Builder
	for {
		for _, ev := range got {
			text.WriteString(ev.Content)
		}
		if n := len(got); n > 0 && got[n-1].Terminal() {
			break
		}
		<-first.Ready()
		got = first.Take()
	}
	if s := text.String(); !strings.Contains(s, "heard: from the stream") || !strings.HasSuffix(s, "echo: final") {
		t.Errorf("the running stream's text %q, want the steered message heard", s)
	}
}

// An engine that cannot steer queues the message and says so once per
// conversation.
func TestBusySteerQueuesWhereTheEngineCannot(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"cursor": engine.NewCursor(engine.Config{Command: enginetest.BuildCursor(t),
			Env: map[string]string{"FAKE_AGENT_LOG": o.Workspace + "/agent.log"}})}
		o.DefaultEngine = "cursor"
		o.Permissions.Mode = engine.ModeBypass
	})
	h.say("alice", "!text 20\n!hang")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "second")
	h.say("alice", "third")
	h.say("alice", "/status")
	h.rec.waitText("2 waiting")
	h.stop()
	if n := strings.Count(h.rec.all(), "cursor cannot take messages while it answers"); n != 1 {
		t.Errorf("told %d times that cursor cannot steer, want once: %q", n, h.rec.texts())
	}
}

// interrupt stops the running answer (kept, marked stopped) and runs the
// new message at once, resuming the same session.
func TestBusyInterrupt(t *testing.T) {
	h := busyHarness(t, core.BusyInterrupt)
	h.say("alice", "hi")
	h.rec.waitText("echo: hi")
	h.say("alice", "!text 20\n!hang")
	h.rec.waitFor("the second answer's start", func(texts []string) bool { return len(texts) == 2 && len(texts[1]) >= 20 })
	h.say("alice", "newer")
	h.rec.waitText("echo: newer")
	h.stop()
	texts := h.rec.texts()
	if len(texts) != 3 || !strings.Contains(texts[1], "Stopped for the newer message") || len(texts[1]) < 20 {
		t.Fatalf("messages %q, want the interrupted answer kept and marked stopped for the newer message, then the new one", texts)
	}
	inv := enginetest.ReadLog(t, h.log)
	if len(inv) != 3 {
		t.Fatalf("the agent ran %d times, want 3", len(inv))
	}
	s1, _ := inv[1].Flag("--resume")
	s2, _ := inv[2].Flag("--resume")
	if s1 == "" || s1 != inv[0].SessionID || s2 != s1 {
		t.Errorf("sessions: first %q, interrupted resumed %q, newer resumed %q; want one session", inv[0].SessionID, s1, s2)
	}
}

// queue keeps today's behaviour: the message waits, the running answer
// never hears of it.
func TestBusyQueue(t *testing.T) {
	h := busyHarness(t, core.BusyQueue)
	h.say("alice", "!text 20\n!hang")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "second")
	h.say("alice", "/status")
	h.rec.waitText("1 waiting")
	h.stop()
	if all := h.rec.all(); strings.Contains(all, "heard") || strings.Contains(all, "(noted") || strings.Contains(all, "cannot take") {
		t.Errorf("a queued message was steered or noted: %q", h.rec.texts())
	}
	if inv := enginetest.ReadLog(t, h.log); len(inv) != 1 {
		t.Errorf("the agent ran %d times before the stop, want once", len(inv))
	}
}

// Interrupted, even the conversation's first turn keeps its session: the
// new message resumes what the stopped one did.
func TestBusyInterruptKeepsTheFirstTurnsSession(t *testing.T) {
	h := busyHarness(t, core.BusyInterrupt)
	h.say("alice", "!text 20\n!hang")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "newer")
	h.rec.waitText("echo: newer")
	h.stop()
	inv := enginetest.ReadLog(t, h.log)
	if len(inv) != 2 {
		t.Fatalf("the agent ran %d times, want 2", len(inv))
	}
	if s, _ := inv[1].Flag("--resume"); s == "" || s != inv[0].SessionID {
		t.Errorf("the newer message resumed %q, want the interrupted turn's session %q", s, inv[0].SessionID)
	}
}

// With queue_depth: 0 (core's negative QueueDepth: none may wait), interrupt
// still runs the newer message: it waits for nothing but the stopped answer
// to end, and is not refused after stopping the answer.
func TestBusyInterruptWithNoWaitingAllowed(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Busy, o.QueueDepth = core.BusyInterrupt, -1
	})
	h.say("alice", "!text 20\n!hang")
	h.rec.waitFor("the answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.say("alice", "newer")
	h.rec.waitFor("the newer message answered or refused", func(texts []string) bool {
		all := strings.Join(texts, "\n")
		return strings.Contains(all, "echo: newer") || strings.Contains(all, "messages are waiting")
	})
	h.stop()
	if all := h.rec.all(); !strings.Contains(all, "echo: newer") || strings.Contains(all, "messages are waiting") {
		t.Errorf("the answer was stopped and the newer message refused: %q", h.rec.texts())
	}
}

// unsteerable is an in-process engine under Claude Code's name: core takes
// it for one that steers, and every Steer fails (the run takes no input),
// as for a message that comes just after the run's last result. Its first
// run holds until release; each run records its turn and the files it was
// given that did not exist.
type unsteerable struct {
	release chan struct{}
	mu      sync.Mutex
	prompts []string
	missing []string
}

func (u *unsteerable) Name() string            { return "claude-code" }
func (u *unsteerable) Lookup() (string, error) { return "unsteerable", nil }
func (u *unsteerable) Run(ctx context.Context, t engine.Turn) (*engine.Run, error) {
	u.mu.Lock()
	first := len(u.prompts) == 0
	u.prompts = append(u.prompts, t.Prompt)
	for _, f := range t.Files {
		if _, err := os.Stat(f); err != nil {
			u.missing = append(u.missing, f)
		}
	}
	u.mu.Unlock()
	ch := make(chan parser.Event, 2)
	go func() {
		defer close(ch)
		ch <- parser.Event{Type: parser.Text, Content: "echo: " + t.Prompt}
		if first {
			select {
			case <-u.release:
			case <-ctx.Done():
			}
		}
		ch <- parser.Event{Type: parser.Done, SessionID: "s"}
	}()
	return engine.NewRun(ch), nil
}

// logWatch is a log handler that closes seen at the first record whose
// message is msg, and then waits until hold is closed, when it is not nil.
type logWatch struct {
	msg  string
	seen chan struct{}
	once *sync.Once
	hold chan struct{}
}

func (w logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w logWatch) Handle(_ context.Context, r slog.Record) error {
	if r.Message == w.msg {
		first := false
		w.once.Do(func() { close(w.seen); first = true })
		if first && w.hold != nil {
			<-w.hold
		}
	}
	return nil
}

// wait waits for the record, as the recorder waits for a text: a message
// that never comes (the log line reworded) fails the test.
func (w logWatch) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("no log record %q", w.msg)
	}
}

func (w logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w logWatch) WithGroup(string) slog.Handler      { return w }

// A message handed to a run that can no longer take it gets a turn of its
// own after it, in order with those sent after it, and with its files:
// those moved into the working directory for the steer are found there.
func TestMessageNotSteeredRunsNextWithItsFiles(t *testing.T) {
	workdir := t.TempDir()
	eng := &unsteerable{release: make(chan struct{})}
	requeued := logWatch{msg: "message not steered; queued for a turn of its own", seen: make(chan struct{}), once: &sync.Once{}}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"claude-code": eng}
		o.Channels = map[string]core.Override{"rec:C1": {Workdir: workdir}}
		o.Logger = slog.New(requeued)
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first")
	in := core.Inbox{Dir: filepath.Join(h.opts.Workspace, "inbox")}
	att, err := in.Save("report.txt", strings.NewReader("numbers"))
	if err != nil {
		t.Fatal(err)
	}
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", User: "alice", ID: "m-steer-att",
		Text: "second", Attachments: []core.Attachment{att}})
	requeued.wait(t)
	h.say("alice", "third")
	close(eng.release)
	h.rec.waitText("echo: third")
	h.stop()
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if len(eng.prompts) != 3 || eng.prompts[0] != "first" || !strings.HasPrefix(eng.prompts[1], "second") || eng.prompts[2] != "third" {
		t.Errorf("the agent was asked %q, want first, second, third", eng.prompts)
	}
	if len(eng.missing) > 0 {
		t.Errorf("the turn of the message not steered was given files that are not there: %q", eng.missing)
	}
}

// A message that was being steered into the answer when /stop came is
// dropped with the waiting ones when the stopped run refuses it, instead of
// running after the stop; one sent after the /stop runs.
func TestStopDropsTheMessageBeingSteered(t *testing.T) {
	eng := &unsteerable{release: make(chan struct{})}
	steering := logWatch{msg: "message not steered; queued for a turn of its own", seen: make(chan struct{}),
		once: &sync.Once{}, hold: make(chan struct{})}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"claude-code": eng}
		o.Logger = slog.New(steering)
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first")
	h.say("alice", "second")
	steering.wait(t) // its steer has failed; it is not back in the queue yet
	h.say("alice", "/stop")
	h.rec.waitText("Stopping the running answer")
	close(steering.hold)
	h.say("alice", "third")
	h.rec.waitText("echo: third")
	h.stop()
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if len(eng.prompts) != 2 || eng.prompts[0] != "first" || eng.prompts[1] != "third" {
		t.Errorf("the agent was asked %q, want first, then third (second was stopped)", eng.prompts)
	}
}

// A message still waiting for a turn slot when a newer one interrupts it
// is told it stopped for the newer message, as a running answer is, not
// the bare "Stopped" of a /stop.
func TestBusyInterruptWhileWaitingForASlot(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Busy, o.MaxConcurrent = core.BusyInterrupt, 1
	})
	h.sayAs("C2", "alice", "!text 20\n!hang") // holds the one slot
	h.rec.waitFor("the other answer's start", func(texts []string) bool { return len(texts) == 1 && len(texts[0]) >= 20 })
	h.sayAs("C1", "alice", "first")
	h.sayAs("C1", "alice", "newer")
	h.rec.waitText("⏹️")
	h.stop()
	texts := h.rec.texts()
	if len(texts) < 2 || !strings.Contains(texts[1], "Stopped for the newer message") {
		t.Errorf("messages %q, want the waiting one stopped for the newer message", texts)
	}
}

// turnMeter records the outcome of every turn the Meter is told of.
type turnMeter struct {
	mu       sync.Mutex
	outcomes []string
}

func (m *turnMeter) TurnEnded(s core.TurnStats) {
	m.mu.Lock()
	m.outcomes = append(m.outcomes, s.Outcome)
	m.mu.Unlock()
}
func (m *turnMeter) EngineFailed(string, string)        {}
func (m *turnMeter) Approval(string, string)            {}
func (m *turnMeter) BusyMessage(string, string, string) {}

// Messages handed to the running turn that it refuses once golem shuts
// down are told so and counted, as the queued ones are: every message
// meant to run is a turn the Meter is told of.
func TestShutdownEndsAndCountsTheMessagesNotSteered(t *testing.T) {
	eng := &unsteerable{release: make(chan struct{})}
	steering := logWatch{msg: "message not steered; queued for a turn of its own", seen: make(chan struct{}),
		once: &sync.Once{}, hold: make(chan struct{})}
	meter := &turnMeter{}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"claude-code": eng}
		o.Logger = slog.New(steering)
		o.Meter = meter
		o.QueueDepth = 1
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first")
	h.say("alice", "second")
	steering.wait(t)         // its steer failed; it is not back in the queue yet
	h.say("alice", "third")  // waits to be steered
	h.say("alice", "fourth") // queued: one waits to be steered already
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = h.d.Close(ctx)
	}()
	h.rec.waitText("this message was not run") // fourth: Close has begun
	close(steering.hold)
	h.rec.waitFor("second and third told too", func(texts []string) bool {
		return strings.Count(strings.Join(texts, "\n"), "this message was not run") == 3
	})
	cancel() // stops the first
	<-closed
	h.stop()
	meter.mu.Lock()
	defer meter.mu.Unlock()
	if n := len(meter.outcomes); n != 4 {
		t.Errorf("the meter was told of %d turns %q, want 4: first, and the three that never ran", n, meter.outcomes)
	}
}
