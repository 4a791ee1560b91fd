package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
)

// testFinishTurn: a turn's end keeps the session, the usage and the turn's
// record at once, each part optional, and after a restart.
func testFinishTurn(t *testing.T, open func() store.Store) {
	s := open()
	k := key("slack:T1:C1")
	at := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	if err := s.SaveConversation(store.Conversation{Key: k, Engine: "codex", Model: "m1", SessionID: "s0", LastUsed: at}); err != nil {
		t.Fatal(err)
	}
	turn := store.Usage{Turns: 1, InputTokens: 10, OutputTokens: 20, CostUSD: 0.5, DurationMS: 1000}
	err := s.FinishTurn(store.TurnEnd{Key: k,
		Session: func(c *store.Conversation) bool {
			if c.Model != "m1" || c.SessionID != "s0" {
				t.Errorf("Session got %+v, want the stored conversation", c)
			}
			c.SessionID, c.Sessions = "s1", store.AddSession(c.Sessions, "s1")
			return true
		},
		Usage: &turn, User: "slack:U1", At: at,
		Record: &store.TurnRecord{ID: "r1", Key: k, By: "slack:U1", Started: at, Outcome: "done", DurationMS: 1000, CostUSD: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	// Only the usage and the record; a Session that saves nothing.
	if err := s.FinishTurn(store.TurnEnd{Key: k, Session: func(*store.Conversation) bool { return false },
		Usage: &turn, User: "slack:U2", At: at, Record: &store.TurnRecord{ID: "r2", Key: k, Started: at.Add(time.Second), Outcome: "stopped"}}); err != nil {
		t.Fatal(err)
	}
	// Only the session.
	if err := s.FinishTurn(store.TurnEnd{Key: key("slack:T1:C2"), Session: func(c *store.Conversation) bool { c.SessionID = "n"; return true }}); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = open()
	if c, err := s.Conversation(k); err != nil || c.SessionID != "s1" || c.Model != "m1" || c.Engine != "codex" || len(c.Sessions) != 1 {
		t.Errorf("conversation after the turns' ends: %+v, %v; want session s1, the rest kept", c, err)
	}
	if c, err := s.Conversation(key("slack:T1:C2")); err != nil || c.SessionID != "n" || c.LastUsed.IsZero() {
		t.Errorf("a new conversation's record: %+v, %v; want its session and a LastUsed", c, err)
	}
	got, err := s.UsageTotals(k, "slack:U1", at)
	if err != nil {
		t.Fatal(err)
	}
	if got.Conversation.Turns != 2 || got.Conversation.CostUSD != 1 || got.UserToday.Turns != 1 || got.Today.Turns != 2 || got.Month.Tokens() != 60 {
		t.Errorf("usage after two turns' ends: %+v", got)
	}
	if got, _ := s.UsageTotals(key("slack:T1:C2"), "slack:U1", at); got.Conversation.Turns != 0 {
		t.Errorf("a turn's end without usage counted %+v", got.Conversation)
	}
	recs, err := s.RecentTurns(k)
	if err != nil || len(recs) != 2 || recs[0].ID != "r2" || recs[1].ID != "r1" || recs[1].CostUSD != 0.5 {
		t.Errorf("turn records %+v, %v; want r2 then r1", recs, err)
	}
}

// testFinishTurnTrims: the turn's record counts in the conversation's
// last store.MaxTurnRecords as RecordTurn's does.
func testFinishTurnTrims(t *testing.T, open func() store.Store) {
	s := open()
	k := key("slack:T1:C1")
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	n := store.MaxTurnRecords + 3
	for i := range n {
		r := store.TurnRecord{ID: fmt.Sprint("r", i), Key: k, Started: t0.Add(time.Duration(i) * time.Second), Outcome: "done"}
		if err := s.FinishTurn(store.TurnEnd{Key: k, Record: &r}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.RecentTurns(k)
	if err != nil || len(recs) != store.MaxTurnRecords || recs[0].ID != fmt.Sprint("r", n-1) || recs[len(recs)-1].ID != "r3" {
		t.Fatalf("%d records (%v), want the last %d, newest first", len(recs), err, store.MaxTurnRecords)
	}
}

// testFinishTurnConcurrent: turns' ends racing with each other and with
// other updates of the conversation lose no change and no usage.
func testFinishTurnConcurrent(t *testing.T, open func() store.Store) {
	s := open()
	k := key("slack:T1:C1")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	turn := store.Usage{Turns: 1}
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.FinishTurn(store.TurnEnd{Key: k, Session: func(c *store.Conversation) bool {
				c.Sessions = store.AddSession(c.Sessions, fmt.Sprint("s", i))
				return true
			}, Usage: &turn, User: "slack:U1", At: at}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.UpdateConversation(k, func(c *store.Conversation) bool { c.Model = "m"; return true }); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.AddUsage(key("slack:T1:C2"), "slack:U1", at, turn); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c, err := s.Conversation(k)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sessions) != n || c.Model != "m" {
		t.Errorf("after %d turns' ends and updates: %+v; one undid another", n, c)
	}
	if got, _ := s.UsageTotals(k, "slack:U1", at); got.Conversation.Turns != n || got.UserToday.Turns != 2*n || got.Today.Turns != 2*n {
		t.Errorf("usage after %d turns' ends and %d additions: %+v", n, n, got)
	}
}

// testFinishTurnArguments: the errors of FinishTurn.
func testFinishTurnArguments(t *testing.T, open func() store.Store) {
	s := open()
	k := key("slack:T1:C1")
	if err := s.FinishTurn(store.TurnEnd{}); err == nil {
		t.Error("a turn's end without key: no error")
	}
	if err := s.FinishTurn(store.TurnEnd{Key: k, Record: &store.TurnRecord{Key: k}}); err == nil {
		t.Error("a turn's end with a record without id: no error")
	}
	closeStore(t, s)
	if err := s.FinishTurn(store.TurnEnd{Key: k, Usage: &store.Usage{Turns: 1}}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("FinishTurn after close: %v, want ErrClosed", err)
	}
}
