package core_test

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// scripted is an in-process engine: each run sends the events its script
// returns, or those a test feeds through feed when script is nil.
type scripted struct {
	script func(t engine.Turn) []parser.Event
	feed   chan parser.Event
}

func (s *scripted) Name() string            { return "claude-code" }
func (s *scripted) Lookup() (string, error) { return "scripted", nil }
func (s *scripted) Run(ctx context.Context, t engine.Turn) (*engine.Run, error) {
	ch := make(chan parser.Event, 16)
	go func() {
		defer close(ch)
		if s.script != nil {
			for _, ev := range s.script(t) {
				ch <- ev
			}
			return
		}
		for ev := range s.feed {
			ch <- ev
			if ev.Terminal() {
				return
			}
		}
	}()
	return engine.NewRun(ch), nil
}

// signal is an adapter that does nothing but count calls and report each.
type signal struct {
	limits core.Limits
	calls  chan time.Time // receives the time of every Send/Edit when not nil
	n      atomic.Int64
	id     atomic.Int64
}

func (s *signal) Platform() string                                { return "bench" }
func (s *signal) Start(ctx context.Context, _ core.Handler) error { <-ctx.Done(); return nil }
func (s *signal) Limits() core.Limits                             { return s.limits }
func (s *signal) Measure(markdown string) int                     { return len(markdown) }
func (s *signal) Send(_ context.Context, to core.Place, _ string) (core.MessageRef, error) {
	s.hit()
	return core.MessageRef{Channel: to.Channel, ID: strconv.FormatInt(s.id.Add(1), 10)}, nil
}
func (s *signal) Edit(context.Context, core.MessageRef, string) error { s.hit(); return nil }
func (s *signal) SendActivity(context.Context, core.MessageRef, string) error {
	s.hit()
	return nil
}
func (s *signal) hit() {
	s.n.Add(1)
	if s.calls != nil {
		s.calls <- time.Now()
	}
}

func benchDispatcher(b testing.TB, eng engine.Engine, a core.Adapter, maxConcurrent int) *core.Dispatcher {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
	if err != nil {
		b.Fatal(err)
	}
	d, err := core.NewDispatcher(core.Options{
		Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
		Store: st, Workspace: b.TempDir(), Allow: []string{"*"}, MaxConcurrent: maxConcurrent,
		QueueDepth: 100, Logger: discardLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	d.Register(a)
	b.Cleanup(func() { _ = d.Close(context.Background()); _ = st.Close() })
	return d
}

// BenchmarkEventToAdapter measures the streamer and dispatcher overhead:
// from an engine event to the adapter call it causes, with no edit
// interval in the way. Reports the median and p99.
func BenchmarkEventToAdapter(b *testing.B) {
	eng := &scripted{feed: make(chan parser.Event)}
	sig := &signal{limits: core.Limits{MaxLen: 1 << 20}, calls: make(chan time.Time, 1)}
	d := benchDispatcher(b, eng, sig, 1)
	d.Handle(context.Background(), core.Message{Platform: "bench", Channel: "C", User: "u", Text: "go", ID: "1"})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		eng.feed <- parser.Event{Type: parser.Text, Content: "x"}
		at := <-sig.calls
		lat = append(lat, at.Sub(start))
	}
	b.StopTimer()
	go func() {
		for range sig.calls {
		}
	}()
	eng.feed <- parser.Event{Type: parser.Done, SessionID: "s"}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkTurns runs turns across 1,000 conversations with a scripted
// in-process engine (five text deltas, a tool call, done) and an adapter
// that answers at once; reports turns per second.
func BenchmarkTurns(b *testing.B) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	eng := &scripted{script: func(engine.Turn) []parser.Event {
		defer func() { mu.Lock(); wg.Done(); mu.Unlock() }()
		return []parser.Event{
			{Type: parser.Text, Content: "Hello "}, {Type: parser.Text, Content: "from "},
			{Type: parser.ToolCall, ID: "t", Name: "Bash", Args: []byte(`{"command":"ls"}`)},
			{Type: parser.Text, Content: "the "}, {Type: parser.Text, Content: "agent"},
			{Type: parser.Text, Content: "."}, {Type: parser.Done, SessionID: "s"},
		}
	}}
	sig := &signal{limits: core.Limits{MaxLen: 4000}}
	d := benchDispatcher(b, eng, sig, 64)
	const conversations = 1000
	b.ResetTimer()
	start := time.Now()
	wg.Add(b.N)
	for i := range b.N {
		d.Handle(context.Background(), core.Message{
			Platform: "bench", Channel: "C" + strconv.Itoa(i%conversations), User: "u",
			Text: "hi", ID: strconv.Itoa(i),
		})
	}
	wg.Wait()
	// The engine has run every turn; wait for the answers to be delivered.
	_ = d.Close(context.Background())
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
}

// BenchmarkHeapPerTurn holds 1,000 turns running at once (each has written
// a short answer and waits) and reports the live heap per running turn.
func BenchmarkHeapPerTurn(b *testing.B) {
	for range b.N {
		const turns = 1000
		release := make(chan struct{})
		var started sync.WaitGroup
		started.Add(turns)
		hold := &holdEngine{release: release, started: &started}
		sig := &signal{limits: core.Limits{MaxLen: 4000}}
		d := benchDispatcher(b, hold, sig, turns)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range turns {
			d.Handle(context.Background(), core.Message{Platform: "bench", Channel: "C" + strconv.Itoa(i), User: "u", Text: "hi", ID: "1"})
		}
		started.Wait()
		for sig.n.Load() < turns { // every answer's first post has landed
			runtime.Gosched()
		}
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		close(release)
		_ = d.Close(context.Background())
		b.ReportMetric(float64(during.HeapAlloc-before.HeapAlloc)/turns/1024, "KB/turn")
	}
}

// holdEngine writes a short answer, then waits for release.
type holdEngine struct {
	release chan struct{}
	started *sync.WaitGroup
}

func (h *holdEngine) Name() string            { return "claude-code" }
func (h *holdEngine) Lookup() (string, error) { return "hold", nil }
func (h *holdEngine) Run(ctx context.Context, _ engine.Turn) (*engine.Run, error) {
	ch := make(chan parser.Event, 1)
	go func() {
		defer close(ch)
		ch <- parser.Event{Type: parser.Text, Content: "Looking at it…"}
		h.started.Done()
		select {
		case <-h.release:
		case <-ctx.Done():
		}
		ch <- parser.Event{Type: parser.Done, SessionID: "s"}
	}()
	return engine.NewRun(ch), nil
}
