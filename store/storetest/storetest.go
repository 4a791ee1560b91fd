// Package storetest is the conformance suite of store.Store: every backend
// passes Run, so that core, the adapters and the journals see one
// behaviour whichever keeps their state.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
)

// Fresh makes an empty store of the backend for one test and returns how
// to open it and how to reach its records raw.
type Fresh func(t *testing.T) Backend

// Backend is one test's store of a backend.
type Backend struct {
	// Open opens the store. It may be called again once the store it
	// returned is closed, and then opens the same data, as a restart
	// would; the test closes every store it opens.
	Open func() (store.Store, error)

	// The schedules' records and index entries beneath the store, as a
	// damaged disk or another program would leave them: the test calls
	// these while no store Open returned is open.
	//
	// PutScheduleRecord writes raw as the record of the schedule id.
	PutScheduleRecord func(id string, raw []byte) error
	// ScheduleIndexEntry reads the value of the index entry of the
	// schedule id in key's conversation; found is false when there is
	// none. The store writes the entries empty and never reads their
	// values, so a value the test put shows whether the store wrote the
	// entry since.
	ScheduleIndexEntry func(key store.Key, id string) (value []byte, found bool, err error)
	// PutScheduleIndexEntry writes value as the index entry of the
	// schedule id in key's conversation.
	PutScheduleIndexEntry func(key store.Key, id string, value []byte) error
}

// Run runs the suite against the backend fresh makes.
func Run(t *testing.T, fresh Fresh) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open func() store.Store)
	}{
		{"Conversations", testConversations},
		{"UpdateConversation", testUpdateConversation},
		{"UpdateConversationKeepsConcurrentChanges", testUpdateConcurrent},
		{"MarkSeen", testMarkSeen},
		{"MarkSeenExpires", testMarkSeenExpires},
		{"MarkSeenConcurrent", testMarkSeenConcurrent},
		{"Turns", testTurns},
		{"FinishTurn", testFinishTurn},
		{"FinishTurnTrims", testFinishTurnTrims},
		{"FinishTurnConcurrent", testFinishTurnConcurrent},
		{"FinishTurnArguments", testFinishTurnArguments},
		{"Approvals", testApprovals},
		{"Usage", testUsage},
		{"ListConversations", testListConversations},
		{"TurnRecords", testTurnRecords},
		{"DailyUsage", testDailyUsage},
		{"State", testState},
		{"StateCopies", testStateCopies},
		{"StateLargeValues", testStateLarge},
		{"UpdateState", testUpdateState},
		{"UpdateStateKeepsConcurrentChanges", testUpdateStateConcurrent},
		{"InvalidArguments", testInvalidArguments},
		{"Closed", testClosed},
		{"CloseDuringWrites", testCloseDuringWrites},
		{"ConcurrentUse", testConcurrentUse},
		{"Schedules", testSchedules},
		{"FireSchedule", testFireSchedule},
		{"ScheduleIndex", testScheduleIndex},
		{"AddScheduleConcurrent", testAddScheduleConcurrent},
	}
	raw := []struct {
		name string
		fn   func(t *testing.T, open func() store.Store, b Backend)
	}{
		{"UndecodedSchedule", testUndecodedSchedule},
		{"ScheduleIndexEntryStays", testScheduleIndexEntryStays},
	}
	run := func(name string, fn func(t *testing.T, open func() store.Store, b Backend)) {
		t.Run(name, func(t *testing.T) {
			b := fresh(t)
			fn(t, func() store.Store {
				t.Helper()
				s, err := b.Open()
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}, b)
		})
	}
	for _, tt := range tests {
		run(tt.name, func(t *testing.T, open func() store.Store, _ Backend) { tt.fn(t, open) })
	}
	for _, tt := range raw {
		run(tt.name, tt.fn)
	}
}

// key is the conversation key whose stored form is s.
func key(s string) store.Key {
	k, err := store.ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func closeStore(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func sameConversation(a, b store.Conversation) bool {
	return a.Key == b.Key && a.Engine == b.Engine && a.Model == b.Model &&
		a.SessionID == b.SessionID && a.LastUsed.Equal(b.LastUsed) && slices.Equal(a.Sessions, b.Sessions)
}

func testConversations(t *testing.T, open func() store.Store) {
	used := time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)
	s := open()
	// Saved, replaced, cleared, and one never saved.
	steps := []func() error{
		func() error {
			return s.SaveConversation(store.Conversation{Key: key("slack:T1:C1"), Engine: "cursor", Model: "gpt-5", SessionID: "sess-1", LastUsed: used})
		},
		func() error {
			return s.SaveConversation(store.Conversation{Key: key("slack:T1:C2"), Engine: "cursor", SessionID: "old", LastUsed: used})
		},
		func() error {
			return s.SaveConversation(store.Conversation{Key: key("slack:T1:C2"), SessionID: "new", LastUsed: used})
		},
		func() error {
			return s.SaveConversation(store.Conversation{Key: key("slack:T1:C3"), Engine: "codex", Model: "m", SessionID: "sess", LastUsed: used, Sessions: []string{"before", "sess"}})
		},
		func() error { return s.ClearSession(key("slack:T1:C3")) },
		func() error { return s.ClearSession(key("slack:T1:C4")) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	before := time.Now()
	if err := s.SaveConversation(store.Conversation{Key: key("http::x"), SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	want := []store.Conversation{
		{Key: key("slack:T1:C1"), Engine: "cursor", Model: "gpt-5", SessionID: "sess-1", LastUsed: used},
		{Key: key("slack:T1:C2"), SessionID: "new", LastUsed: used},
		{Key: key("slack:T1:C3"), Engine: "codex", Model: "m", LastUsed: used, Sessions: []string{"before", "sess"}}, // /new keeps what it had
		{Key: key("slack:T1:C4")}, // clearing an absent key stores nothing
		{Key: key("slack:T9:C1")},
	}
	check := func(when string, s store.Store) {
		t.Helper()
		for _, w := range want {
			got, err := s.Conversation(w.Key)
			if err != nil {
				t.Fatalf("%s: conversation %s: %v", when, w.Key, err)
			}
			if !sameConversation(got, w) {
				t.Errorf("%s: got %+v, want %+v", when, got, w)
			}
		}
		got, err := s.Conversation(key("http::x"))
		if err != nil {
			t.Fatal(err)
		}
		if got.SessionID != "s" || got.LastUsed.Before(before.Truncate(time.Millisecond)) || got.LastUsed.After(after) {
			t.Errorf("%s: a zero LastUsed was saved as %v, want the time of the save (%v to %v)", when, got.LastUsed, before, after)
		}
	}
	check("before reopen", s)
	closeStore(t, s)
	check("after reopen", open())
}

func testUpdateConversation(t *testing.T, open func() store.Store) {
	s := open()
	used := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := s.SaveConversation(store.Conversation{Key: key("k:w:c"), Engine: "cursor", SessionID: "s1", LastUsed: used}); err != nil {
		t.Fatal(err)
	}
	err := s.UpdateConversation(key("k:w:c"), func(c *store.Conversation) bool {
		if c.Engine != "cursor" || c.SessionID != "s1" || !c.LastUsed.Equal(used) {
			t.Errorf("fn got %+v, want the stored conversation", c)
		}
		c.Model = "m"
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Conversation(key("k:w:c")); err != nil || c.Model != "m" || c.Engine != "cursor" || c.SessionID != "s1" {
		t.Errorf("after update: %+v, %v", c, err)
	}
	if err := s.UpdateConversation(key("k:w:other"), func(c *store.Conversation) bool {
		if c.Key != key("k:w:other") || c.SessionID != "" {
			t.Errorf("fn of an absent key got %+v", c)
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Conversation(key("k:w:other")); !c.LastUsed.IsZero() {
		t.Errorf("fn returning false stored %+v", c)
	}
	if err := s.UpdateConversation(key("k:w:new"), func(c *store.Conversation) bool { c.SessionID = "n"; return true }); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Conversation(key("k:w:new")); c.SessionID != "n" || c.LastUsed.IsZero() {
		t.Errorf("update of an absent key stored %+v, want its session and a LastUsed", c)
	}
}

func testUpdateConcurrent(t *testing.T, open func() store.Store) {
	s := open()
	const n = 8 // 24 writers of one record: on etcd each success makes the others retry
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.UpdateConversation(key("k:w:c"), func(c *store.Conversation) bool { c.Model = "m"; return true }); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.UpdateConversation(key("k:w:c"), func(c *store.Conversation) bool { c.SessionID = fmt.Sprint("s", i); return true }); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.UpdateConversation(key("k:w:c"), func(c *store.Conversation) bool { c.Engine = "codex"; return true }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c, err := s.Conversation(key("k:w:c"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "m" || c.Engine != "codex" || c.SessionID == "" || c.LastUsed.IsZero() {
		t.Errorf("an update undid another: %+v", c)
	}
}

func testMarkSeen(t *testing.T, open func() store.Store) {
	s := open()
	for _, step := range []struct {
		id    string
		first bool
	}{{"slack:Ev1", true}, {"slack:Ev1", false}, {"slack:Ev2", true}, {"telegram:Ev1", true}, {"slack:Ev2", false}} {
		first, err := s.MarkSeen(step.id, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if first != step.first {
			t.Errorf("MarkSeen(%s) = %t, want %t", step.id, first, step.first)
		}
	}
	closeStore(t, s)
	s = open()
	if first, err := s.MarkSeen("slack:Ev1", time.Hour); err != nil || first {
		t.Errorf("after reopen, MarkSeen of a seen id = %t, %v; want false", first, err)
	}
}

// testMarkSeenExpires marks an id with a short time to live and marks it
// again until it counts as new, which it must within a second.
func testMarkSeenExpires(t *testing.T, open func() store.Store) {
	s := open()
	const ttl = 50 * time.Millisecond
	start := time.Now()
	if first, err := s.MarkSeen("e", ttl); err != nil || !first {
		t.Fatalf("first MarkSeen = %t, %v", first, err)
	}
	for {
		first, err := s.MarkSeen("e", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if first {
			if since := time.Since(start); since < ttl {
				t.Errorf("the id counted as new after %v, before its ttl %v", since, ttl)
			}
			break
		}
		if time.Since(start) > time.Second+ttl {
			t.Fatalf("the id still counts as seen %v after it was marked with a ttl of %v", time.Since(start), ttl)
		}
		time.Sleep(5 * time.Millisecond) // polling a clock, nothing to wait on
	}
	// Marked anew, it is seen again.
	if first, err := s.MarkSeen("e", time.Hour); err != nil || first {
		t.Errorf("MarkSeen after the renewal = %t, %v; want false", first, err)
	}
}

func testMarkSeenConcurrent(t *testing.T, open func() store.Store) {
	s := open()
	const workers, ids = 8, 10
	var mu sync.Mutex
	firsts := map[string]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range ids {
				id := fmt.Sprint("event-", i)
				first, err := s.MarkSeen(id, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if first {
					mu.Lock()
					firsts[id]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for i := range ids {
		if n := firsts[fmt.Sprint("event-", i)]; n != 1 {
			t.Errorf("event-%d was first %d times, want once", i, n)
		}
	}
}

func testTurns(t *testing.T, open func() store.Store) {
	s := open()
	if got, err := s.InFlightTurns(); err != nil || len(got) != 0 {
		t.Fatalf("fresh store: %+v, %v; want none", got, err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	first := store.InFlight{ID: "t1", Key: key("slack:T:C"), Platform: "slack", Channel: "C", Thread: "1.0", ReplyTo: "1.0", Started: t0}
	second := store.InFlight{ID: "t0", Key: key("http::x"), Platform: "http", Channel: "x", Started: t0.Add(time.Minute)}
	same := store.InFlight{ID: "t2", Key: key("http::y"), Platform: "http", Channel: "y", Started: t0.Add(time.Minute)}
	for _, turn := range []store.InFlight{same, second, first} {
		if err := s.BeginTurn(turn); err != nil {
			t.Fatalf("begin %s: %v", turn.ID, err)
		}
	}
	// The answer message exists now, and the agent runs: the same turn is
	// updated, not added.
	first.AnswerChannel, first.AnswerThread, first.AnswerID = "C", "1.0", "2.0"
	first.AgentGroup, first.AgentStart, first.Stream = 4242, 1<<40+7, true
	if err := s.BeginTurn(first); err != nil {
		t.Fatalf("update: %v", err)
	}
	closeStore(t, s)
	s = open()
	got, err := s.InFlightTurns()
	if err != nil {
		t.Fatalf("in flight: %v", err)
	}
	want := []store.InFlight{first, second, same} // oldest first, then by id
	if len(got) != len(want) {
		t.Fatalf("got %d turns %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Started.Equal(w.Started) {
			t.Errorf("turn %d started %v, want %v", i, g.Started, w.Started)
		}
		g.Started, w.Started = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("turn %d = %+v, want %+v", i, g, w)
		}
	}
	for _, id := range []string{"t1", "t1", "unknown"} { // ending twice is fine
		if err := s.EndTurn(id); err != nil {
			t.Fatalf("end %s: %v", id, err)
		}
	}
	got, err = s.InFlightTurns()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "t0" || got[1].ID != "t2" {
		t.Errorf("after ending t1: %+v, want t0 and t2", got)
	}
}

func testApprovals(t *testing.T, open func() store.Store) {
	s := open()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	a := store.Approval{ID: "b", Key: key("slack:T:C"), Platform: "slack", Tool: "Bash", ArgsDigest: "sha256:00", AskedBy: "slack:U1", Asked: t0,
		Channel: "C", Thread: "1.0", Message: "2.0"}
	for _, rec := range []store.Approval{a, {ID: "a", Tool: "Write", Asked: t0.Add(-time.Second)}, {ID: "c", Tool: "Edit", Asked: t0}} {
		if err := s.SaveApproval(rec); err != nil {
			t.Fatal(err)
		}
	}
	a.Decision, a.Reason, a.DecidedBy, a.Decided = "allow", "answered", "slack:U1", t0.Add(time.Second)
	if err := s.SaveApproval(a); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = open()
	all, err := s.Approvals(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].ID != "a" || all[1].ID != "b" || all[2].ID != "c" {
		t.Fatalf("Approvals(false) = %+v, want a, b, c", all)
	}
	if g := all[1]; g.Decision != "allow" || g.Reason != "answered" || g.DecidedBy != "slack:U1" || !g.Decided.Equal(a.Decided) ||
		g.Key != a.Key || g.ArgsDigest != a.ArgsDigest || g.Message != a.Message || !g.Asked.Equal(t0) {
		t.Errorf("the decided record reads %+v, want %+v", g, a)
	}
	pending, err := s.Approvals(true)
	if err != nil || len(pending) != 2 || pending[0].ID != "a" || pending[1].ID != "c" {
		t.Fatalf("Approvals(true) = %+v, %v; want a and c", pending, err)
	}
}

func testUsage(t *testing.T, open func() store.Store) {
	s := open()
	day1 := time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	day2 := day1.Add(2 * time.Hour) // 1 April: another day and another month
	turn := store.Usage{Turns: 1, InputTokens: 10, OutputTokens: 20, CostUSD: 0.5, DurationMS: 1000}
	for _, add := range []struct {
		conv, user string
		at         time.Time
	}{{"slack::C1", "slack:U1", day1}, {"slack::C1", "slack:U2", day1}, {"slack::C2", "slack:U1", day1}, {"slack::C1", "slack:U1", day2}} {
		if err := s.AddUsage(key(add.conv), add.user, add.at, turn); err != nil {
			t.Fatal(err)
		}
	}
	closeStore(t, s)
	s = open()
	got, err := s.UsageTotals(key("slack::C1"), "slack:U1", day1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"Conversation": 3, "ConversationMonth": 2, "UserToday": 2, "UserMonth": 2, "Today": 3, "Month": 3}
	have := map[string]store.Usage{"Conversation": got.Conversation, "ConversationMonth": got.ConversationMonth, "UserToday": got.UserToday,
		"UserMonth": got.UserMonth, "Today": got.Today, "Month": got.Month}
	for k, n := range want {
		u := have[k]
		if u.Turns != n || u.Tokens() != int64(30*n) || u.CostUSD != 0.5*float64(n) || u.DurationMS != int64(1000*n) {
			t.Errorf("%s = %+v, want %d turns' worth", k, u, n)
		}
	}
	got, _ = s.UsageTotals(key("slack::C1"), "slack:U1", day2)
	if got.UserToday.Turns != 1 || got.ConversationMonth.Turns != 1 || got.Conversation.Turns != 3 || got.Month.Turns != 1 {
		t.Errorf("on 1 April: %+v", got)
	}
	// Concurrent additions all count.
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := s.AddUsage(key("slack::C9"), "slack:U9", day1, turn); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, _ := s.UsageTotals(key("slack::C9"), "slack:U9", day1); got.Conversation.Turns != 10 || got.UserToday.Turns != 10 || got.Today.Turns != 13 {
		t.Errorf("after 10 concurrent additions: %+v", got)
	}
}

func testState(t *testing.T, open func() store.Store) {
	tests := []struct {
		key   string
		saves [][]byte // saved in order under the key
		want  []byte   // nil = absent
	}{
		{"absent", nil, nil},
		{"saved", [][]byte{[]byte("42")}, []byte("42")},
		{"replaced", [][]byte{[]byte("41"), []byte("42")}, []byte("42")},
		{"empty value is kept", [][]byte{{}}, []byte{}},
		{"nil removes", [][]byte{[]byte("42"), nil}, nil},
		{"nil of an absent key", [][]byte{nil}, nil},
		{"telegram.offset/with:odd%chars", [][]byte{[]byte{0, 1, 0xff}}, []byte{0, 1, 0xff}},
	}
	s := open()
	for _, tt := range tests {
		for _, v := range tt.saves {
			if err := s.Save(tt.key, v); err != nil {
				t.Fatalf("save %s: %v", tt.key, err)
			}
		}
	}
	closeStore(t, s)
	s = open()
	for _, tt := range tests {
		got, err := s.Load(tt.key)
		if err != nil {
			t.Fatalf("load %s: %v", tt.key, err)
		}
		if (got == nil) != (tt.want == nil) || !bytes.Equal(got, tt.want) {
			t.Errorf("%s: load = %q (nil %t), want %q (nil %t)", tt.key, got, got == nil, tt.want, tt.want == nil)
		}
	}
}

func testStateCopies(t *testing.T, open func() store.Store) {
	s := open()
	v := []byte("abc")
	if err := s.Save("k", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X'
	got, err := s.Load("k")
	if err != nil {
		t.Fatal(err)
	}
	got[1] = 'Y'
	again, err := s.Load("k")
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != "abc" {
		t.Errorf("load after caller edits = %q, want %q", again, "abc")
	}
}

// testStateLarge saves a journal at the largest size a store takes, and
// one byte more.
func testStateLarge(t *testing.T, open func() store.Store) {
	s := open()
	big := bytes.Repeat([]byte("0123456789abcdef"), store.MaxValue/16+1)[:store.MaxValue]
	if err := s.Save("slack.pending", big); err != nil {
		t.Fatalf("save of MaxValue bytes: %v", err)
	}
	err := s.Save("slack.pending", append(big, 'x'))
	if !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("save of MaxValue+1 bytes: %v, want ErrTooLarge", err)
	}
	got, err := s.Load("slack.pending")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("load after a refused save: %d bytes, %v; want the %d saved before", len(got), err, len(big))
	}
}

func testInvalidArguments(t *testing.T, open func() store.Store) {
	s := open()
	tests := []struct {
		name string
		do   func() error
	}{
		{"conversation without key", func() error { return s.SaveConversation(store.Conversation{SessionID: "x"}) }},
		{"update without key", func() error {
			return s.UpdateConversation(store.Key{}, func(*store.Conversation) bool { return true })
		}},
		{"seen without id", func() error { _, err := s.MarkSeen("", time.Minute); return err }},
		{"seen with zero ttl", func() error { _, err := s.MarkSeen("e1", 0); return err }},
		{"seen with negative ttl", func() error { _, err := s.MarkSeen("e1", -time.Second); return err }},
		{"turn without id", func() error { return s.BeginTurn(store.InFlight{Key: key("k:w:c")}) }},
		{"end turn without id", func() error { return s.EndTurn("") }},
		{"approval without id", func() error { return s.SaveApproval(store.Approval{Tool: "Bash"}) }},
		{"state without key", func() error { return s.Save("", []byte("v")) }},
		{"schedule without id", func() error { return s.SaveSchedule(store.Schedule{Prompt: "p"}) }},
		{"update schedule without id", func() error {
			_, err := s.UpdateSchedule("", func(*store.Schedule) bool { return true })
			return err
		}},
		{"delete schedule without id", func() error { return s.DeleteSchedule("") }},
		{"add schedule without id", func() error { return s.AddSchedule(store.Schedule{Prompt: "p"}, 0) }},
	}
	for _, tt := range tests {
		if err := tt.do(); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// testClosed checks that after Close every call fails with ErrClosed, and
// that closing again is fine.
func testClosed(t *testing.T, open func() store.Store) {
	s := open()
	if err := s.Save("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	now := time.Now()
	calls := map[string]func() error{
		"Conversation":     func() error { _, err := s.Conversation(key("k:w:c")); return err },
		"SaveConversation": func() error { return s.SaveConversation(store.Conversation{Key: key("k:w:c")}) },
		"UpdateConversation": func() error {
			return s.UpdateConversation(key("k:w:c"), func(*store.Conversation) bool { return true })
		},
		"ClearSession":  func() error { return s.ClearSession(key("k:w:c")) },
		"MarkSeen":      func() error { _, err := s.MarkSeen("e", time.Minute); return err },
		"BeginTurn":     func() error { return s.BeginTurn(store.InFlight{ID: "t"}) },
		"EndTurn":       func() error { return s.EndTurn("t") },
		"InFlightTurns": func() error { _, err := s.InFlightTurns(); return err },
		"SaveApproval":  func() error { return s.SaveApproval(store.Approval{ID: "a"}) },
		"Approvals":     func() error { _, err := s.Approvals(false); return err },
		"AddUsage":      func() error { return s.AddUsage(key("k:w:c"), "u", now, store.Usage{Turns: 1}) },
		"UsageTotals":   func() error { _, err := s.UsageTotals(key("k:w:c"), "u", now); return err },
		"Load":          func() error { _, err := s.Load("k"); return err },
		"Save":          func() error { return s.Save("k", []byte("v")) },
		"SaveSchedule":  func() error { return s.SaveSchedule(store.Schedule{ID: "s"}) },
		"Schedule":      func() error { _, _, err := s.Schedule("s"); return err },
		"UpdateSchedule": func() error {
			_, err := s.UpdateSchedule("s", func(*store.Schedule) bool { return true })
			return err
		},
		"DeleteSchedule": func() error { return s.DeleteSchedule("s") },
		"AllSchedules":   func() error { _, err := s.AllSchedules(); return err },
		"AddSchedule":    func() error { return s.AddSchedule(store.Schedule{ID: "s"}, 0) },
		"ConversationSchedules": func() error {
			_, err := s.ConversationSchedules(key("k:w:c"))
			return err
		},
		"ListConversations": func() error { _, err := s.ListConversations(); return err },
		"RecordTurn": func() error {
			return s.RecordTurn(store.TurnRecord{ID: "t", Key: key("k:w:c"), Started: now})
		},
		"RecentTurns": func() error { _, err := s.RecentTurns(key("k:w:c")); return err },
		"DailyUsage":  func() error { _, err := s.DailyUsage(now, now); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
}

// testConcurrentUse runs every kind of call from many goroutines at once
// (under -race) and checks what each left.
func testConcurrentUse(t *testing.T, open func() store.Store) {
	s := open()
	const workers, rounds = 8, 10
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := store.NewKey("slack", "T", fmt.Sprint("C", w%3), "") // shared by several workers
			for i := range rounds {
				if _, err := s.MarkSeen(fmt.Sprint("event-", i), time.Hour); err != nil {
					t.Error(err)
					return
				}
				if err := s.UpdateConversation(key, func(c *store.Conversation) bool {
					c.SessionID = fmt.Sprintf("sess-%d-%d", w, i)
					return true
				}); err != nil {
					t.Error(err)
					return
				}
				turn := fmt.Sprintf("turn-%d-%d", w, i)
				if err := s.BeginTurn(store.InFlight{ID: turn, Key: key, Started: time.Now()}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.InFlightTurns(); err != nil {
					t.Error(err)
					return
				}
				if err := s.EndTurn(turn); err != nil {
					t.Error(err)
					return
				}
				if err := s.AddUsage(key, "u", day, store.Usage{Turns: 1}); err != nil {
					t.Error(err)
					return
				}
				if err := s.Save(fmt.Sprint("w", w), []byte(fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if turns, err := s.InFlightTurns(); err != nil || len(turns) != 0 {
		t.Errorf("turns left in flight: %+v, %v", turns, err)
	}
	for w := range workers {
		v, err := s.Load(fmt.Sprint("w", w))
		if err != nil || string(v) != fmt.Sprint(rounds-1) {
			t.Errorf("state of worker %d = %q, %v; want %d", w, v, err, rounds-1)
		}
	}
	u, err := s.UsageTotals(key("slack:T:C0"), "u", day)
	if err != nil || u.UserToday.Turns != workers*rounds {
		t.Errorf("usage of user u today = %+v, %v; want %d turns", u.UserToday, err, workers*rounds)
	}
}

// testCloseDuringWrites closes the store while writes are under way: each
// write either returned nil and is there after a reopen, or failed with
// ErrClosed.
func testCloseDuringWrites(t *testing.T, open func() store.Store) {
	s := open()
	const writers = 16
	errs := make([]error, writers)
	var started, wg sync.WaitGroup
	started.Add(writers)
	for i := range writers {
		wg.Go(func() {
			started.Done()
			errs[i] = s.Save(fmt.Sprint("k", i), []byte("v"))
		})
	}
	started.Wait()
	closeStore(t, s)
	wg.Wait()
	s = open()
	saved := 0
	for i, err := range errs {
		v, lerr := s.Load(fmt.Sprint("k", i))
		switch {
		case lerr != nil:
			t.Fatal(lerr)
		case err == nil && string(v) != "v":
			t.Errorf("save %d returned nil, but after a reopen it reads %q", i, v)
		case err != nil && !errors.Is(err, store.ErrClosed):
			t.Errorf("save %d during Close: %v, want nil or ErrClosed", i, err)
		case err == nil:
			saved++
		}
	}
	t.Logf("%d of %d writes under way when Close came were kept", saved, writers)
}
