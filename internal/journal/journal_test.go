package journal

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// memState is a core.StateStore in memory that counts its writes.
type memState struct {
	mu     sync.Mutex
	m      map[string][]byte
	writes int
}

func (s *memState) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

func (s *memState) Save(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.writes++
	if value == nil {
		delete(s.m, key)
	} else {
		s.m[key] = append([]byte(nil), value...)
	}
	return nil
}

func idOf(raw json.RawMessage) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.ID
}

func ev(id string) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"id":%q}`, id)) }

func open(s *memState) *Journal { return New(Options{Store: s, Key: "x.pending", ID: idOf}) }

// What is kept and saved is replayed by the next journal on the store,
// oldest first; what was struck is not.
func TestKeptEventsAreReplayedOldestFirst(t *testing.T) {
	s := &memState{}
	j := open(s)
	for _, id := range []string{"c", "a", "b"} {
		if !j.Keep(id, ev(id)) {
			t.Fatalf("Keep(%s) refused", id)
		}
	}
	j.Save()
	j.Done("a")

	var got []string
	open(s).Replay(func(raw json.RawMessage) bool {
		got = append(got, idOf(raw))
		return idOf(raw) == "b" // b still waits
	})
	if strings.Join(got, ",") != "c,b" {
		t.Fatalf("replayed %q, want c then b", got)
	}
	if b, _ := s.Load("x.pending"); string(b) != `[{"id":"b"}]` {
		t.Fatalf("after the replay the store holds %s, want only b", b)
	}
	third := open(s)
	third.Done("b")
	if b, _ := s.Load("x.pending"); b != nil {
		t.Fatalf("an empty journal leaves %s in the store", b)
	}
}

// An event never kept costs no write when it is done.
func TestDoneOfAnEventNeverKeptWritesNothing(t *testing.T) {
	s := &memState{}
	j := open(s)
	j.Done("a")
	j.Save()
	if s.writes != 0 {
		t.Fatalf("%d writes for events never kept", s.writes)
	}
}

// Past its bounds the journal keeps no more events until one is struck,
// and so neither the store nor its writes grow without limit.
func TestTheJournalIsBounded(t *testing.T) {
	s := &memState{}
	j := New(Options{Store: s, Key: "x.pending", ID: idOf, Max: 2, MaxBytes: 1000})
	if !j.Keep("a", ev("a")) || !j.Keep("b", ev("b")) {
		t.Fatal("refused under the bound")
	}
	if j.Keep("c", ev("c")) {
		t.Fatal("a third event kept past Max 2")
	}
	j.Done("a")
	if !j.Keep("c", ev("c")) {
		t.Fatal("refused once there is room again")
	}
	j.Save()
	if n := open(s).Len(); n != 2 {
		t.Fatalf("the store holds %d events, want 2", n)
	}

	small := New(Options{Store: &memState{}, Key: "y", ID: idOf, MaxBytes: 20})
	if !small.Keep("a", ev("a")) {
		t.Fatal("refused under MaxBytes")
	}
	if small.Keep("big", json.RawMessage(`{"id":"big","text":"`+strings.Repeat("x", 30)+`"}`)) {
		t.Fatal("kept past MaxBytes")
	}
}

// An unreadable journal, or entries without an id, are dropped, not kept
// forever.
func TestUnreadableEntriesAreDropped(t *testing.T) {
	s := &memState{}
	_ = s.Save("x.pending", []byte(`[{"id":"a"},{"no":"id"},{"id":"a"}]`))
	j := open(s)
	if n := j.Len(); n != 1 {
		t.Fatalf("loaded %d entries, want the one with an id", n)
	}
	j.Save()
	if b, _ := s.Load("x.pending"); string(b) != `[{"id":"a"}]` {
		t.Fatalf("store holds %s after saving", b)
	}
	_ = s.Save("x.pending", []byte(`not json`))
	j = open(s)
	j.Save()
	if b, _ := s.Load("x.pending"); b != nil {
		t.Fatalf("an unreadable journal is kept: %s", b)
	}
}

// A nil store keeps nothing and fails nothing.
func TestNoStore(t *testing.T) {
	j := New(Options{Key: "x", ID: idOf})
	j.Keep("a", ev("a"))
	j.Save()
	j.Done("a")
	j.Replay(func(json.RawMessage) bool { t.Fatal("replayed from no store"); return false })
}

// Adopt hands on another journal's events oldest first, then empties it;
// what take kept is in this journal, saved.
func TestAdoptHandsOnAnotherJournal(t *testing.T) {
	s := &memState{}
	gone := New(Options{Store: s, Key: "x.pending/gone", ID: idOf})
	for _, id := range []string{"a", "b"} {
		gone.Keep(id, ev(id))
	}
	gone.Save()
	mine := open(s)
	var got []string
	n := mine.Adopt("x.pending/gone", func(raw json.RawMessage) bool {
		id := idOf(raw)
		got = append(got, id)
		if id == "b" { // b waits for its download: kept here
			mine.Keep(id, raw)
			mine.Save()
			return true
		}
		return false
	})
	if n != 2 || strings.Join(got, ",") != "a,b" {
		t.Fatalf("adopted %d: %q, want a then b", n, got)
	}
	if b, _ := s.Load("x.pending/gone"); b != nil {
		t.Errorf("the adopted journal still holds %s", b)
	}
	if b, _ := s.Load("x.pending"); string(b) != `[{"id":"b"}]` {
		t.Errorf("this journal holds %s, want b", b)
	}
	if n := mine.Adopt("x.pending/none", func(json.RawMessage) bool { t.Fatal("an empty journal handed something on"); return false }); n != 0 {
		t.Errorf("an absent journal held %d", n)
	}
}
