package core_test

import (
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// TestEventQueueReusesWhatWasTaken: a stream's batches do not each
// allocate: once taken again, the queue appends into the slice it handed
// out before, and each Take returns exactly what was pushed since the last.
func TestEventQueueReusesWhatWasTaken(t *testing.T) {
	q := core.NewEventQueue()
	text := func(s string) parser.Event { return parser.Event{Type: parser.Text, Content: s} }
	q.Push(text("a"), text("b"))
	first := q.Take()
	if len(first) != 2 || first[0].Content != "a" || first[1].Content != "b" {
		t.Fatalf("first take %+v, want a and b", first)
	}
	q.Push(text("c"))
	if second := q.Take(); len(second) != 1 || second[0].Content != "c" {
		t.Fatalf("second take %+v, want c", second)
	}
	q.Push(text("d"))
	third := q.Take()
	if len(third) != 1 || third[0].Content != "d" {
		t.Fatalf("third take %+v, want d", third)
	}
	if &third[0] != &first[0] {
		t.Error("the third take got new memory, want the first take's reused")
	}
	if first[1].Content != "" {
		t.Errorf("the reused slice still holds %q of an earlier take", first[1].Content)
	}
	if got := q.Take(); len(got) != 0 {
		t.Errorf("an empty queue gave %+v", got)
	}
}
