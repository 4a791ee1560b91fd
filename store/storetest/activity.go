package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
)

func testListConversations(t *testing.T, open func() store.Store) {
	s := open()
	if got, err := s.ListConversations(); err != nil || len(got) != 0 {
		t.Fatalf("fresh store: %+v, %v; want none", got, err)
	}
	used := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// A key whose parts hold the escaped characters, and a key that is
	// another's prefix.
	keys := []string{"slack:T1:C1", "slack:T1:C1:1700.1", "http::a%3Ab%25c", "telegram::42"}
	for i, k := range keys {
		// Its model and sessions hold what the record's time looks like.
		c := store.Conversation{Key: key(k), Engine: "codex", Model: `"u":1,"u":2}`, SessionID: fmt.Sprint("s", i),
			LastUsed: used.Add(time.Duration(i) * time.Minute), Sessions: []string{`x","u":3`, `\"u":4`}}
		if err := s.SaveConversation(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ClearSession(key("slack:T1:C9")); err != nil { // stores nothing
		t.Fatal(err)
	}
	closeStore(t, s)
	s = open()
	got, err := s.ListConversations()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keys) {
		t.Fatalf("listed %d conversations %+v, want %d", len(got), got, len(keys))
	}
	for i, k := range keys {
		j := slices.IndexFunc(got, func(c store.ConversationTime) bool { return c.Key == key(k) })
		if j < 0 {
			t.Errorf("%s is not listed", k)
			continue
		}
		if want := used.Add(time.Duration(i) * time.Minute); !got[j].LastUsed.Equal(want) {
			t.Errorf("%s listed as last used %v, want %v", k, got[j].LastUsed, want)
		}
	}
}

func testTurnRecords(t *testing.T, open func() store.Store) {
	s := open()
	a, b := key("slack:T1:C1"), key("slack:T1:C1:7") // a's stored form is b's prefix
	if got, err := s.RecentTurns(a); err != nil || len(got) != 0 {
		t.Fatalf("fresh store: %+v, %v; want none", got, err)
	}
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	n := store.MaxTurnRecords + 5
	// Recorded out of order: the oldest by Started go, whatever order they came in.
	for _, i := range append(rangeDown(n, 10), rangeDown(10, 0)...) {
		rec := store.TurnRecord{ID: fmt.Sprint("a", i), Key: a, By: "slack:U1", Started: t0.Add(time.Duration(i) * time.Second),
			Outcome: "done", DurationMS: int64(i), CostUSD: 0.5, Tokens: 100}
		if err := s.RecordTurn(rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := s.RecordTurn(store.TurnRecord{ID: "b0", Key: b, By: "slack:U2", Started: t0, Outcome: "stopped"}); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = open()
	got, err := s.RecentTurns(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != store.MaxTurnRecords {
		t.Fatalf("kept %d turns, want %d", len(got), store.MaxTurnRecords)
	}
	for i, r := range got { // newest first
		w := n - 1 - i
		want := store.TurnRecord{ID: fmt.Sprint("a", w), Key: a, By: "slack:U1", Started: t0.Add(time.Duration(w) * time.Second),
			Outcome: "done", DurationMS: int64(w), CostUSD: 0.5, Tokens: 100}
		if !r.Started.Equal(want.Started) {
			t.Errorf("turn %d started %v, want %v", i, r.Started, want.Started)
		}
		r.Started = want.Started
		if r != want {
			t.Errorf("turn %d = %+v, want %+v", i, r, want)
		}
	}
	if got, err := s.RecentTurns(b); err != nil || len(got) != 1 || got[0].ID != "b0" || got[0].Outcome != "stopped" {
		t.Errorf("the other conversation's turns: %+v, %v; want b0 alone", got, err)
	}
	if got, err := s.RecentTurns(key("slack:T1:C")); err != nil || len(got) != 0 {
		t.Errorf("a conversation without turns: %+v, %v", got, err)
	}
	if err := s.RecordTurn(store.TurnRecord{Key: a}); err == nil {
		t.Error("a turn record without an id was taken")
	}
}

func rangeDown(from, to int) []int {
	var out []int
	for i := from - 1; i >= to; i-- {
		out = append(out, i)
	}
	return out
}

func testDailyUsage(t *testing.T, open func() store.Store) {
	s := open()
	day := func(d int) time.Time { return time.Date(2026, 2, 25, 15, 0, 0, 0, time.UTC).AddDate(0, 0, d) }
	for _, u := range []struct {
		at   time.Time
		cost float64
	}{{day(0), 1}, {day(0), 2}, {day(2), 4}, {day(5), 8}, {day(-1), 16}} {
		if err := s.AddUsage(key("slack:T:C"), "slack:U", u.at, store.Usage{Turns: 1, CostUSD: u.cost, InputTokens: 10}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.DailyUsage(day(0), day(4)) // 2026-02-25 .. 2026-03-01
	if err != nil {
		t.Fatal(err)
	}
	want := []store.DayUsage{
		{Day: "2026-02-25", Usage: store.Usage{Turns: 2, CostUSD: 3, InputTokens: 20}},
		{Day: "2026-02-26"},
		{Day: "2026-02-27", Usage: store.Usage{Turns: 1, CostUSD: 4, InputTokens: 10}},
		{Day: "2026-02-28"},
		{Day: "2026-03-01"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("daily usage %+v, want %+v", got, want)
	}
	if got, err := s.DailyUsage(day(1), day(0)); err != nil || len(got) != 0 {
		t.Errorf("an empty range: %+v, %v", got, err)
	}
}
