package core

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// TestWatchJoinsTheAnswersEnd: a watcher joining a long answer gets its
// last maxTapText bytes after "…", cut on a character's start, then what
// comes next until the terminal event; after it nobody joins.
func TestWatchJoinsTheAnswersEnd(t *testing.T) {
	key := store.NewKey("slack", "T1", "C1", "")
	tp := &tap{watchers: map[int]func(...parser.Event){}}
	d := &Dispatcher{convs: map[store.Key]*conversation{key: {key: key, running: &running{tap: tp}}}}
	if _, ok := d.Watch(store.NewKey("slack", "T1", "C2", ""), func(...parser.Event) {}); ok {
		t.Error("a conversation with nothing running was joined")
	}
	tp.publish(parser.Event{Type: parser.Text, Content: "x" + strings.Repeat("é", maxTapText/2)}) // 2 bytes each: past the bound
	tp.publish(parser.Event{Type: parser.Text, Content: "end"})
	var got []parser.Event
	stop, ok := d.Watch(key, func(evs ...parser.Event) { got = append(got, evs...) })
	if !ok {
		t.Fatal("the running answer was not joined")
	}
	defer stop()
	if len(got) != 1 || got[0].Type != parser.Text {
		t.Fatalf("joined with %+v", got)
	}
	text := got[0].Content
	if !strings.HasPrefix(text, "…é") || len(text) > maxTapText+len("…") || !utf8.ValidString(text) || !strings.HasSuffix(text, "end") {
		t.Fatalf("joined with %d bytes, valid %v, %q…%q", len(text), utf8.ValidString(text), text[:5], text[len(text)-5:])
	}
	tp.publish(parser.Event{Type: parser.Text, Content: " more"}, parser.Event{Type: parser.Done})
	if len(got) != 3 || got[1].Content != " more" || got[2].Type != parser.Done {
		t.Errorf("after joining: %+v", got[1:])
	}
	if _, ok := d.Watch(key, func(...parser.Event) {}); ok {
		t.Error("an ended answer was joined")
	}
}
