package core_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// askRecorder is the recorder with buttons: an Asker.
type askRecorder struct {
	*recorder
	mu         sync.Mutex
	questions  []core.Question
	askedAfter []asked           // what the chat showed when each question came
	settled    map[string]string // question id -> text
	hold       chan struct{}     // when set, Ask returns once it is closed
}

// asked is what the chat showed when a question was posted: how many
// messages, the first one's id and text, and the tool activity.
type asked struct {
	order              int
	firstID, firstText string
	activity           []string
}

var _ core.Asker = (*askRecorder)(nil)

func (a *askRecorder) Ask(ctx context.Context, q core.Question) (core.MessageRef, error) {
	var at asked
	a.recorder.mu.Lock()
	at.order = len(a.recorder.order)
	if at.order > 0 {
		at.firstID = a.recorder.order[0]
		at.firstText = a.recorder.msgs[at.firstID].text
	}
	for _, act := range a.recorder.activity {
		at.activity = append(at.activity, act.text)
	}
	a.recorder.mu.Unlock()
	a.mu.Lock()
	a.askedAfter = append(a.askedAfter, at)
	a.mu.Unlock()
	if a.hold != nil {
		// The question shows (its buttons can be clicked) before the
		// platform's answer to the post has come back.
		a.mu.Lock()
		a.questions = append(a.questions, q)
		a.mu.Unlock()
		a.notify()
		<-a.hold
		return a.recorder.Send(ctx, q.Place, q.Text)
	}
	ref, err := a.recorder.Send(ctx, q.Place, q.Text)
	a.mu.Lock()
	a.questions = append(a.questions, q)
	a.mu.Unlock()
	a.notify()
	return ref, err
}

func (a *askRecorder) Settle(ctx context.Context, ref core.MessageRef, text string) error {
	a.mu.Lock()
	if a.settled == nil {
		a.settled = map[string]string{}
	}
	a.settled[ref.ID] = text
	a.mu.Unlock()
	return a.recorder.Edit(ctx, ref, text)
}

func (a *askRecorder) question(t *testing.T, n int) core.Question {
	t.Helper()
	a.waitFor(fmt.Sprintf("%d questions", n), func([]string) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.questions) >= n
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.questions[n-1]
}

const askWrite = "!ask Write {\"file_path\":\"/w/a.txt\",\"content\":\"secret content\"}\nwritten"

var idInText = regexp.MustCompile("/allow ([0-9a-f]{8})")

// everything is what the recorder shows: messages and tool activity.
func (r *recorder) everything() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, id := range r.order {
		b.WriteString(r.msgs[id].text + "\n")
	}
	for _, a := range r.activity {
		b.WriteString(a.text + "\n")
	}
	return b.String()
}

func (r *recorder) waitAll(substr string) string {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%q anywhere", substr), func([]string) bool { return strings.Contains(r.everything(), substr) })
	return r.everything()
}

// Without buttons the question names /allow and /deny; /allow by the
// asker lets the agent go on, and every request and decision is recorded
// without the arguments.
func TestApprovalByText(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", askWrite)
	shown := h.rec.waitAll("/deny ")
	if !strings.Contains(shown, "wants to write `/w/a.txt`") || !strings.Contains(shown, "secret content") {
		t.Errorf("the question does not show the file and a preview: %q", shown)
	}
	id := idInText.FindStringSubmatch(shown)[1]
	h.say("alice", "/status")
	h.rec.waitAll("Waiting for approval")
	h.say("alice", "/allow "+id)
	h.rec.waitAll("echo: written")
	h.rec.waitAll("✅ Write allowed by alice.")
	h.say("alice", "/allow "+id)
	h.rec.waitAll("This was already answered.")

	recs, err := h.store.Approvals(false)
	if err != nil || len(recs) != 1 {
		t.Fatalf("approval records %+v, %v", recs, err)
	}
	r := recs[0]
	if r.ID != id || r.Tool != "Write" || r.Decision != "allow" || r.DecidedBy != "rec:alice" || r.AskedBy != "rec:alice" ||
		!strings.HasPrefix(r.ArgsDigest, "sha256:") || r.Decided.Before(r.Asked) {
		t.Errorf("record %+v", r)
	}
	if raw := fmt.Sprintf("%+v", r); strings.Contains(raw, "secret") {
		t.Errorf("the record holds the arguments: %s", raw)
	}
}

func TestApprovalDenyByText(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", askWrite)
	id := idInText.FindStringSubmatch(h.rec.waitAll("/deny "))[1]
	h.say("alice", "/deny "+id+" not today")
	h.rec.waitAll("❌ Write denied by alice.")
	h.rec.waitAll("echo: written") // the agent carries on without the tool
}

// Buttons: a stranger's click is refused, the asker's decides (the source
// settles the question itself), a second click is too late.
func TestApprovalButtons(t *testing.T) {
	rec := &askRecorder{}
	h := newHarness(t, chatLimits, nil)
	rec.recorder = h.rec
	h.d.Register(rec)
	h.say("alice", askWrite)
	q := rec.question(t, 1)
	if len(q.Choices) != 3 || q.Choices[0].Label != "Allow" || q.Choices[1].Label != "Allow for this session" || q.Choices[2].Label != "Deny" {
		t.Fatalf("choices %+v", q.Choices)
	}
	for _, c := range q.Choices {
		if len(c.Data) > 64 {
			t.Errorf("data %q is longer than 64 bytes", c.Data)
		}
	}
	click := func(user, data string) core.ActionResult {
		return h.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "C1", User: user, UserName: user,
			Question: core.MessageRef{Channel: "C1", ID: h.lastID()}, Data: data})
	}
	if res := click("mallory", q.Choices[0].Data); !errors.Is(res.Err, core.ErrNotApprover) || res.Refusal == "" {
		t.Errorf("a stranger's click: %+v", res)
	}
	other := h.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "C2", User: "alice", Data: q.Choices[0].Data})
	if !errors.Is(other.Err, core.ErrUnknownRequest) {
		t.Errorf("a click from another conversation: %+v", other)
	}
	if res := click("alice", q.Choices[1].Data); res.Err != nil || res.Settled != "✅ Write allowed for this session by alice." {
		t.Errorf("the asker's click: %+v", res)
	}
	if res := click("alice", q.Choices[2].Data); !errors.Is(res.Err, core.ErrDecided) {
		t.Errorf("a double click: %+v", res)
	}
	h.rec.waitAll("echo: written")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.settled) != 0 {
		t.Errorf("core settled a question its source settles: %v", rec.settled)
	}
}

func (h *harness) lastID() string {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return h.rec.order[len(h.rec.order)-1]
}

// An approver may answer for the asker; nobody answering denies at the
// timeout, and the question says so.
func TestApprovalApproverAndTimeout(t *testing.T) {
	rec := &askRecorder{}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Permissions = core.Permissions{Approvers: []string{"rec:bob"}, Timeout: 200 * time.Millisecond}
	})
	rec.recorder = h.rec
	h.d.Register(rec)
	h.say("alice", "!ask Bash {\"command\":\"touch x\"}\n!ask Bash {\"command\":\"touch y\"}\nend")
	q := rec.question(t, 1)
	res := h.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "C1", User: "bob", UserName: "Bob", Data: q.Choices[0].Data})
	if res.Err != nil {
		t.Fatalf("the approver's click: %+v", res)
	}
	rec.question(t, 2) // left to time out
	h.rec.waitAll("⌛ Bash denied: no answer in")
	h.rec.waitAll("echo: end")
	recs, _ := h.store.Approvals(false)
	if len(recs) != 2 || recs[0].DecidedBy != "rec:bob" || recs[1].Reason != store.ApprovalTimedOut || recs[1].Decision != "deny" {
		t.Errorf("records %+v", recs)
	}
}

// /stop denies what waits and stops the turn.
func TestApprovalStop(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", askWrite)
	h.rec.waitAll("/deny ")
	h.say("alice", "/stop")
	h.rec.waitAll("⏹️ Write denied: the answer was stopped.")
	recs, _ := h.store.Approvals(false)
	if len(recs) != 1 || recs[0].Reason != store.ApprovalStopped {
		t.Errorf("records %+v", recs)
	}
}

// A turn that runs out of time while its request waits denies it saying
// so, not as if nobody had answered within the approval timeout, and the
// decision is counted with why it ended.
func TestApprovalTurnTimeoutAndMeter(t *testing.T) {
	meter := &approvalMeter{}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Timeout = 300 * time.Millisecond
		o.Permissions.Timeout = time.Hour
		o.Meter = meter
	})
	h.say("alice", askWrite)
	text := h.rec.waitAll("⌛ Write denied: the answer ran out of time.")
	if strings.Contains(text, "no answer in") {
		t.Errorf("a turn timeout read as an approval timeout:\n%s", text)
	}
	recs, _ := h.store.Approvals(false)
	if len(recs) != 1 || recs[0].Reason != store.ApprovalTurnTimedOut {
		t.Errorf("records %+v", recs)
	}
	meter.decidedMu.Lock()
	defer meter.decidedMu.Unlock()
	if want := []string{"deny turn_timed_out"}; fmt.Sprint(meter.decided) != fmt.Sprint(want) {
		t.Errorf("meter told %q, want %q", meter.decided, want)
	}
}

// approvalMeter records the approvals the Meter is told of.
type approvalMeter struct {
	turnMeter
	decidedMu sync.Mutex
	decided   []string
}

func (m *approvalMeter) Approval(decision, reason string) {
	m.decidedMu.Lock()
	defer m.decidedMu.Unlock()
	m.decided = append(m.decided, decision+" "+reason)
}

// A stream (the HTTP API, the terminal) gets the request as an event with
// golem's id and the decision as another.
func TestApprovalStream(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.Trusted = []string{"http"} })
	q := h.sinkFrom("http", "web", askWrite)
	var req parser.Event
	for req.Type == "" {
		<-q.Ready()
		for _, ev := range q.Take() {
			if ev.Type == parser.PermissionRequest {
				req = ev
			}
		}
	}
	if req.Name != "Write" || len(req.ID) != 8 || !strings.Contains(string(req.Args), "/w/a.txt") {
		t.Fatalf("request %+v", req)
	}
	res := h.d.HandleAction(context.Background(), core.Action{Platform: "http", Channel: "C1", User: "web", Data: "golem:deny:" + req.ID})
	if res.Err != nil {
		t.Fatalf("deny: %+v", res)
	}
	var got []string
	for done := false; !done; {
		<-q.Ready()
		for _, ev := range q.Take() {
			if ev.Type == parser.PermissionDecision {
				got = append(got, ev.ID+" "+ev.Permission.Decision)
			}
			done = done || ev.Terminal()
		}
	}
	if len(got) != 1 || got[0] != req.ID+" deny" {
		t.Errorf("decisions %v", got)
	}
}

// In plan mode what the CLI asks before the plan is approved is refused
// without asking.
func TestApprovalPlanMode(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.Permissions.Mode = engine.ModePlan })
	h.say("alice", askWrite)
	h.rec.waitAll("echo: written")
	recs, _ := h.store.Approvals(false)
	if len(recs) != 1 || recs[0].Reason != "plan_mode" || recs[0].Decision != "deny" {
		t.Errorf("records %+v", recs)
	}
	if strings.Contains(h.rec.everything(), "/allow") {
		t.Errorf("plan mode asked: %q", h.rec.everything())
	}
}

// A restart while a request waits expires it: recorded as denied, its
// question updated.
func TestApprovalExpiresOnRestart(t *testing.T) {
	rec := &askRecorder{}
	h := newHarness(t, chatLimits, nil)
	h.stop()
	st, err := store.Open(h.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	err = st.SaveApproval(store.Approval{ID: "abcd1234", Key: store.NewKey("rec", "", "C1", ""), Platform: "rec", Tool: "Bash", Asked: time.Now(),
		Channel: "C1", Message: "q1"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	h.rec = newRecorder(t, chatLimits)
	rec.recorder = h.rec
	h.rec.msgs["q1"] = &recMessage{text: "question"}
	h.rec.order = append(h.rec.order, "q1")
	h.startWith(rec)
	h.rec.waitAll("⌛ Bash expired: golem restarted")
	h.stop()
	st, _ = store.Open(h.dbPath)
	defer st.Close()
	recs, _ := st.Approvals(true)
	if len(recs) != 0 {
		t.Errorf("still undecided after the restart: %+v", recs)
	}
}

// TestClickWhileTheQuestionIsPosted: a click on a question that comes
// before the platform's answer to its post (Discord shows the message in
// the answer's thread, and delivers a click on it, before golem has read
// the message's id) answers the request, instead of being refused as a
// click from another channel (TestApprovalButtons on Discord failed 1 run
// in 20 so under load).
func TestClickWhileTheQuestionIsPosted(t *testing.T) {
	hold := make(chan struct{})
	rec := &askRecorder{hold: hold}
	h := newHarness(t, chatLimits, nil)
	rec.recorder = h.rec
	h.d.Register(rec)
	h.say("alice", askWrite)
	q := rec.question(t, 1)
	res := h.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "T1", User: "alice", UserName: "alice",
		Question: core.MessageRef{Channel: "T1", ID: "not-yet-known"}, Data: q.Choices[0].Data})
	close(hold)
	if res.Err != nil || !strings.Contains(res.Settled, "allowed by alice") {
		t.Errorf("the asker's click while the question was being posted: %+v", res)
	}
	other := h.d.HandleAction(context.Background(), core.Action{Platform: "other", Channel: "T1", User: "alice", Data: q.Choices[0].Data})
	if !errors.Is(other.Err, core.ErrUnknownRequest) && !errors.Is(other.Err, core.ErrDecided) {
		t.Errorf("a click from another platform: %+v", other)
	}
}
