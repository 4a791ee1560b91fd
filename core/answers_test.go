package core_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
)

// stalledPoster is a recorder whose Send waits until the test opens the
// gate: a platform that does not answer.
type stalledPoster struct {
	*recorder
	gate chan struct{}
}

func (p stalledPoster) Send(ctx context.Context, to core.Place, text string) (core.MessageRef, error) {
	select {
	case <-p.gate:
	case <-ctx.Done():
		return core.MessageRef{}, ctx.Err()
	}
	return p.recorder.Send(ctx, to, text)
}

// Handle returns while the platform does not answer, for a refusal, a
// command and a full queue alike; the answers then arrive in the order
// they were asked for, and Close waits for them. Busy is queue, so the
// second message in C2 finds the queue full whether or not the first's
// turn has begun (a running turn would steer it).
func TestHandleReturnsWhileTheAdapterStalls(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.QueueDepth, o.Busy = -1, core.BusyQueue })
	p := stalledPoster{recorder: h.rec, gate: make(chan struct{})}
	h.d.Register(p) // replaces the recorder as the route for "rec"

	returned := make(chan struct{})
	go func() {
		defer close(returned)
		h.say("mallory", "let me in")   // a refusal
		h.say("alice", "/model opus")   // a command
		h.say("alice", "/status")       // another, after it
		h.sayAs("C2", "alice", "!hang") // a turn in another conversation...
		h.sayAs("C2", "alice", "more")  // ...and a full queue there
	}()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("Handle waited for the platform")
	}
	if n := len(h.rec.texts()); n != 0 {
		t.Fatalf("%d answers posted through a stalled platform", n)
	}
	waitChild(t, h.log)
	h.sayAs("C2", "alice", "/stop")

	closed := make(chan struct{})
	go func() { h.stop(); close(closed) }()
	close(p.gate)
	<-closed
	texts := h.rec.texts()
	at := func(sub string) int {
		return slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, sub) })
	}
	for _, want := range []string{"not allowed", "Model set to **opus**", "**Model:** opus", "messages are waiting", "Stopping the running answer"} {
		if at(want) < 0 {
			t.Errorf("no answer with %q delivered by Close; got %q", want, texts)
		}
	}
	if at("Model set to **opus**") > at("**Model:** opus") {
		t.Errorf("the status answer came before the /model answer it follows: %q", texts)
	}
	if at("messages are waiting") > at("Stopping the running answer") {
		t.Errorf("the /stop answer came before the queue-full answer: %q", texts)
	}
}

// sayAs is say in another channel, so another conversation.
func (h *harness) sayAs(channel, user, text string) {
	n := strconv.FormatInt(msgSeq.Add(1), 10)
	h.d.Handle(context.Background(), core.Message{
		Platform: "rec", Channel: channel, User: user, Text: text, ID: "m" + n, EventID: "e" + n,
	})
}
