package core_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/store"
)

// recorder is an in-process adapter that records what a user would see and
// enforces a platform's limits: a message longer than MaxLen is refused,
// and an edit sooner than MinEditInterval after the last call on the same
// message is counted as a violation.
type recorder struct {
	t      *testing.T
	limits core.Limits

	mu         sync.Mutex
	nextID     int
	msgs       map[string]*recMessage
	order      []string // message ids in posting order
	activity   []recActivity
	violations []string
	edits      int
	changed    chan struct{}
}

type recMessage struct {
	place core.Place
	text  string
	last  time.Time
	edits int
}

type recActivity struct {
	answer core.MessageRef
	text   string
}

func newRecorder(t *testing.T, limits core.Limits) *recorder {
	return &recorder{t: t, limits: limits, msgs: map[string]*recMessage{}, changed: make(chan struct{}, 1)}
}

var _ core.Adapter = (*recorder)(nil)

func (r *recorder) Platform() string                                { return "rec" }
func (r *recorder) Start(ctx context.Context, _ core.Handler) error { <-ctx.Done(); return nil }
func (r *recorder) Limits() core.Limits                             { return r.limits }
func (r *recorder) Measure(markdown string) int                     { return utf8.RuneCountInString(markdown) }

func (r *recorder) Send(_ context.Context, to core.Place, text string) (core.MessageRef, error) {
	r.mu.Lock()
	defer r.notify()
	defer r.mu.Unlock()
	if n := utf8.RuneCountInString(text); n > r.limits.MaxLen {
		r.violations = append(r.violations, fmt.Sprintf("send of %d runes", n))
		return core.MessageRef{}, fmt.Errorf("message too long")
	}
	r.nextID++
	id := strconv.Itoa(r.nextID)
	r.msgs[id] = &recMessage{place: to, text: text, last: time.Now()}
	r.order = append(r.order, id)
	return core.MessageRef{Channel: to.Channel, Thread: to.Thread, ID: id}, nil
}

func (r *recorder) Edit(_ context.Context, ref core.MessageRef, text string) error {
	r.mu.Lock()
	defer r.notify()
	defer r.mu.Unlock()
	m := r.msgs[ref.ID]
	if m == nil {
		return fmt.Errorf("no message %q", ref.ID)
	}
	if n := utf8.RuneCountInString(text); n > r.limits.MaxLen {
		r.violations = append(r.violations, fmt.Sprintf("edit of %d runes", n))
		return fmt.Errorf("message too long")
	}
	if gap := time.Since(m.last); gap < r.limits.MinEditInterval {
		r.violations = append(r.violations, fmt.Sprintf("edit %v after the last", gap))
	}
	m.text, m.last = text, time.Now()
	m.edits++
	r.edits++
	return nil
}

func (r *recorder) SendActivity(_ context.Context, answer core.MessageRef, text string) error {
	r.mu.Lock()
	defer r.notify()
	defer r.mu.Unlock()
	r.activity = append(r.activity, recActivity{answer: answer, text: text})
	return nil
}

func (r *recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// texts returns the messages' current texts in posting order.
func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.order))
	for i, id := range r.order {
		out[i] = r.msgs[id].text
	}
	return out
}

func (r *recorder) all() string { return strings.Join(r.texts(), "\n") }

// waitFor waits until cond holds on what was posted, failing after 20 s.
func (r *recorder) waitFor(what string, cond func(texts []string) bool) {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond(r.texts()) {
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("timed out waiting for %s; messages: %q", what, r.texts())
		}
	}
}

func (r *recorder) waitText(substr string) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%q", substr), func(texts []string) bool {
		return strings.Contains(strings.Join(texts, "\n"), substr)
	})
}

func (r *recorder) checkViolations() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		r.t.Errorf("limit violated: %s", v)
	}
}

// harness wires a dispatcher, a store, the fake agent CLI and a recorder.
type harness struct {
	t      *testing.T
	rec    *recorder
	d      *core.Dispatcher
	store  store.Store
	log    string // the fake agent's invocation log
	opts   core.Options
	dbPath string
}

func newHarness(t *testing.T, limits core.Limits, tweak func(*core.Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, rec: newRecorder(t, limits), log: filepath.Join(dir, "agent.log"), dbPath: filepath.Join(dir, "golem.db")}
	eng := engine.NewClaudeCode(engine.Config{
		Command: enginetest.Build(t),
		Env:     map[string]string{"FAKE_AGENT_LOG": h.log},
	})
	h.opts = core.Options{
		Engines:       map[string]engine.Engine{"claude-code": eng},
		DefaultEngine: "claude-code",
		Workspace:     dir,
		Allow:         []string{"rec:alice"},
		Timeout:       time.Minute,
	}
	if tweak != nil {
		tweak(&h.opts)
	}
	h.start()
	return h
}

func (h *harness) start() {
	h.t.Helper()
	h.startWith(h.rec)
}

// startWith is start with src as the platform instead of the recorder.
func (h *harness) startWith(src core.Source) {
	h.t.Helper()
	st, err := store.Open(h.dbPath)
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = st
	h.opts.Store = st
	d, err := core.NewDispatcher(h.opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.d = d
	d.Register(src)
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = h.d.Close(ctx)
	_ = h.store.Close()
	h.d = nil
}

var msgSeq atomic.Int64

func (h *harness) say(user, text string) {
	n := strconv.FormatInt(msgSeq.Add(1), 10)
	h.d.Handle(context.Background(), core.Message{
		Platform: "rec", Channel: "C1", User: user, Text: text, ID: "m" + n, EventID: "e" + n,
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
