package core_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// sinkOnly is a Source that is not a Poster, like the HTTP API: its
// messages carry their own Sink.
type sinkOnly struct{ platform string }

func (s sinkOnly) Platform() string                                { return s.platform }
func (s sinkOnly) Start(ctx context.Context, _ core.Handler) error { <-ctx.Done(); return nil }

var _ core.Source = sinkOnly{}

func (h *harness) sinkFrom(platform, user, text string) *core.EventQueue {
	q := core.NewEventQueue()
	n := strconv.FormatInt(msgSeq.Add(1), 10)
	h.d.Handle(context.Background(), core.Message{
		Platform: platform, Channel: "C1", User: user, Text: text, ID: "m" + n, Sink: q.Push,
	})
	return q
}

func TestTrustedPlatformsAreTheOnesTheWiringNames(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.Trusted = []string{"local"} })
	h.d.Register(sinkOnly{"local"})
	h.d.Register(sinkOnly{"http"}) // not named: no platform is trusted for its name
	if ev := terminal(t, h.sinkFrom("local", "anyone", "hi")); ev.Type != parser.Done {
		t.Errorf("a trusted platform's user got %+v, want the answer", ev)
	}
	ev := terminal(t, h.sinkFrom("http", "anyone", "hi"))
	if ev.Type != parser.Error || !strings.Contains(ev.Message, "not allowed") {
		t.Errorf("an untrusted platform's unknown user got %+v, want the refusal", ev)
	}
}

func TestInterruptedTurnOfASourceWithoutPosterIsForgotten(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.stop()
	st, err := store.Open(h.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.BeginTurn(store.InFlight{ID: "t1", Key: store.NewKey("local", "", "C1", ""), Platform: "local", Channel: "C1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.d.Register(sinkOnly{"local"}) // nothing to post the notice to: the turn is ended, not kept for ever
	if turns, err := h.store.InFlightTurns(); err != nil || len(turns) != 0 {
		t.Errorf("in-flight turns left: %+v %v", turns, err)
	}
	if texts := h.rec.texts(); len(texts) != 0 {
		t.Errorf("posted %q to another platform's poster", texts)
	}
}

func TestLongCommandAnswerIsSplitToTheLimit(t *testing.T) {
	h := newHarness(t, core.Limits{MaxLen: 120}, nil)
	h.say("alice", "/help")
	h.rec.waitText("/status")
	h.rec.waitText("/stop")
	h.stop()
	h.rec.checkViolations() // a piece over 120 runes would be one
	if n := len(h.rec.texts()); n < 2 {
		t.Errorf("/help came in %d message(s) under a 120-rune limit, want it split", n)
	}
}
