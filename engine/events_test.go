package engine

import (
	"context"
	"testing"

	"github.com/golem-chat/golem/parser"
)

// Next gives the batch it returned last back to the pool, cleared, once
// the caller asks for the next one (which may then reuse its memory: see
// BenchmarkTurns' allocations): it holds nothing of an earlier batch, and
// each batch is exactly what was pushed since the last.
func TestNextGivesBackTheBatchBefore(t *testing.T) {
	r := newRun(context.Background(), 0)
	text := func(s string) parser.Event { return parser.Event{Type: parser.Text, Content: s} }
	batch := func(want ...string) []parser.Event {
		t.Helper()
		r.flush()
		got := r.Next()
		if len(got) != len(want) {
			t.Fatalf("batch %+v, want %q", got, want)
		}
		for i, ev := range got {
			if ev.Content != want[i] {
				t.Fatalf("batch %+v, want %q", got, want)
			}
		}
		return got
	}
	r.push(text("a"), text("b"))
	first := batch("a", "b")
	r.push(text("c"))
	batch("c")
	if first[0].Content != "" || first[1].Content != "" {
		t.Errorf("the batch given back still holds %q, %q", first[0].Content, first[1].Content)
	}
	r.push(text("d"))
	batch("d")
	r.push(parser.Event{Type: parser.Done})
	if end := r.Next(); len(end) != 1 || end[0].Type != parser.Done {
		t.Fatalf("last batch %+v, want done", end)
	}
	if after := r.Next(); after != nil {
		t.Errorf("after the terminal batch Next gave %+v, want nil", after)
	}
}
