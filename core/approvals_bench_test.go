package core_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// asking is an in-process engine whose one run sends what feed gives it
// and hands its Run to runs.
type asking struct {
	feed chan parser.Event
	runs chan *engine.Run
}

func (a *asking) Name() string            { return "claude-code" }
func (a *asking) Lookup() (string, error) { return "asking", nil }
func (a *asking) Run(ctx context.Context, t engine.Turn) (*engine.Run, error) {
	ch := make(chan parser.Event, 16)
	r := engine.NewRun(ch)
	go func() {
		defer close(ch)
		for ev := range a.feed {
			ch <- ev
			if ev.Terminal() {
				return
			}
		}
	}()
	a.runs <- r
	return r, nil
}

// BenchmarkClickToAnswer measures what golem adds from a click arriving
// (Handler.HandleAction) to the answer reaching the run (Run.Respond),
// and reports the median as click-to-answer-µs. Writing the answer to the
// CLI's stdin is engine's BenchmarkControlResponse; the budget is
// their sum under 5 ms. Rerun with
//
//	go test ./core -run '^$' -bench ClickToAnswer -benchtime 2000x
func BenchmarkClickToAnswer(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	eng := &asking{feed: make(chan parser.Event), runs: make(chan *engine.Run, 1)}
	d, err := core.NewDispatcher(core.Options{
		Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
		Store: st, Workspace: b.TempDir(), Trusted: []string{"bench"}, Logger: discardLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close(context.Background())
	q := core.NewEventQueue()
	d.Handle(context.Background(), core.Message{Platform: "bench", Channel: "C", User: "u", Text: "go", Sink: q.Push})
	run := <-eng.runs
	answered := make(chan time.Time, 1)
	go func() {
		for range run.Answers() {
			answered <- time.Now()
		}
	}()
	args := json.RawMessage(`{"command":"touch x","description":"make x"}`)
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		eng.feed <- parser.Event{Type: parser.PermissionRequest, ID: "cli-" + strconv.Itoa(i), Name: "Bash", Args: args}
		var id string
		for id == "" {
			<-q.Ready()
			for _, ev := range q.Take() {
				if ev.Type == parser.PermissionRequest {
					id = ev.ID
				}
			}
		}
		start := time.Now()
		if res := d.HandleAction(context.Background(), core.Action{Platform: "bench", Channel: "C", User: "u", Data: "golem:allow:" + id}); res.Err != nil {
			b.Fatal(res.Err)
		}
		took = append(took, (<-answered).Sub(start))
	}
	b.StopTimer()
	eng.feed <- parser.Event{Type: parser.Done, SessionID: "s"}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "click-to-answer-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}
