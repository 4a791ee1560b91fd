package engine

import (
	"context"
	"testing"

	"github.com/golem-chat/golem/parser"
)

// TestNextReusesTheBatchBefore: a run's batches do not each allocate: the
// batch Next returned is reused once Next is called again, and each batch
// is exactly what was pushed since the last.
func TestNextReusesTheBatchBefore(t *testing.T) {
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
	r.push(text("d"))
	if third := batch("d"); &third[0] != &first[0] {
		t.Error("the third batch got new memory, want the first batch's reused")
	}
	if first[1].Content != "" {
		t.Errorf("the reused batch still holds %q of an earlier one", first[1].Content)
	}
	r.push(parser.Event{Type: parser.Done})
	if end := r.Next(); len(end) != 1 || end[0].Type != parser.Done {
		t.Fatalf("last batch %+v, want done", end)
	}
	if after := r.Next(); after != nil {
		t.Errorf("after the terminal batch Next gave %+v, want nil", after)
	}
}
