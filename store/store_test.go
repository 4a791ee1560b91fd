package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openAt opens the store at path with the given clock (nil = real time)
// and fails the test when that fails.
func openAt(t testing.TB, path string, clock *fakeClock) *Store {
	t.Helper()
	o := defaultOptions()
	if clock != nil {
		o.now = clock.Now
	}
	s, err := open(path, o)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return s
}

// openTemp opens a fresh store that is closed when the test ends.
func openTemp(t *testing.T, clock *fakeClock) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "golem.db")
	s := openAt(t, path, clock)
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func closeStore(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestOpenCreatesParentFolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "golem.db")
	s := openAt(t, path, nil)
	closeStore(t, s)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat: %v", err)
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		t.Errorf("file mode %v, want no access for group and others", mode)
	}
}

func TestConversations(t *testing.T) {
	used := time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)
	clock := newFakeClock()
	tests := []struct {
		name string
		do   func(s *Store) error
		key  string
		want Conversation
	}{
		{
			name: "absent gives the key only",
			do:   func(*Store) error { return nil },
			key:  "slack:T1:C1",
			want: Conversation{Key: "slack:T1:C1"},
		},
		{
			name: "saved comes back",
			do: func(s *Store) error {
				return s.SaveConversation(Conversation{Key: "slack:T1:C1", Engine: "cursor", Model: "gpt-5", SessionID: "sess-1", LastUsed: used})
			},
			key:  "slack:T1:C1",
			want: Conversation{Key: "slack:T1:C1", Engine: "cursor", Model: "gpt-5", SessionID: "sess-1", LastUsed: used},
		},
		{
			name: "zero last used is saved as now",
			do:   func(s *Store) error { return s.SaveConversation(Conversation{Key: "http:x", SessionID: "s"}) },
			key:  "http:x",
			want: Conversation{Key: "http:x", SessionID: "s", LastUsed: clock.Now()},
		},
		{
			name: "save replaces",
			do: func(s *Store) error {
				if err := s.SaveConversation(Conversation{Key: "k", Engine: "cursor", SessionID: "old", LastUsed: used}); err != nil {
					return err
				}
				return s.SaveConversation(Conversation{Key: "k", SessionID: "new", LastUsed: used})
			},
			key:  "k",
			want: Conversation{Key: "k", SessionID: "new", LastUsed: used},
		},
		{
			name: "clear session keeps engine and model",
			do: func(s *Store) error {
				if err := s.SaveConversation(Conversation{Key: "k", Engine: "cursor", Model: "m", SessionID: "sess", LastUsed: used}); err != nil {
					return err
				}
				return s.ClearSession("k")
			},
			key:  "k",
			want: Conversation{Key: "k", Engine: "cursor", Model: "m", LastUsed: used},
		},
		{
			name: "clear session of an absent key stores nothing",
			do:   func(s *Store) error { return s.ClearSession("k") },
			key:  "k",
			want: Conversation{Key: "k"},
		},
		{
			name: "other keys are untouched",
			do: func(s *Store) error {
				return s.SaveConversation(Conversation{Key: "a", SessionID: "x", LastUsed: used})
			},
			key:  "b",
			want: Conversation{Key: "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := openTemp(t, clock)
			if err := tt.do(s); err != nil {
				t.Fatalf("do: %v", err)
			}
			check := func(when string, s *Store) {
				got, err := s.Conversation(tt.key)
				if err != nil {
					t.Fatalf("%s: conversation: %v", when, err)
				}
				if !sameConversation(got, tt.want) {
					t.Errorf("%s: got %+v, want %+v", when, got, tt.want)
				}
			}
			check("before reopen", s)
			closeStore(t, s)
			s = openAt(t, path, clock)
			defer closeStore(t, s)
			check("after reopen", s)
		})
	}
}

func sameConversation(a, b Conversation) bool {
	return a.Key == b.Key && a.Engine == b.Engine && a.Model == b.Model &&
		a.SessionID == b.SessionID && a.LastUsed.Equal(b.LastUsed)
}

func TestInvalidArguments(t *testing.T) {
	s, _ := openTemp(t, nil)
	tests := []struct {
		name string
		do   func() error
	}{
		{"conversation without key", func() error { return s.SaveConversation(Conversation{SessionID: "x"}) }},
		{"seen without id", func() error { _, err := s.MarkSeen("", time.Minute); return err }},
		{"seen with zero ttl", func() error { _, err := s.MarkSeen("e1", 0); return err }},
		{"seen with negative ttl", func() error { _, err := s.MarkSeen("e1", -time.Second); return err }},
		{"turn without id", func() error { return s.BeginTurn(InFlight{Key: "k"}) }},
		{"end turn without id", func() error { return s.EndTurn("") }},
		{"state without key", func() error { return s.Save("", []byte("v")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestClosedStoreErrors(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "golem.db"), nil)
	closeStore(t, s)
	if _, err := s.Conversation("k"); err == nil {
		t.Error("conversation after close: no error")
	}
	if _, err := s.MarkSeen("e", time.Minute); err == nil {
		t.Error("mark seen after close: no error")
	}
	if err := s.Save("k", []byte("v")); err == nil {
		t.Error("save after close: no error")
	}
}

func TestState(t *testing.T) {
	tests := []struct {
		name  string
		saves [][]byte // saved in order under the key
		want  []byte   // nil = absent
	}{
		{"absent", nil, nil},
		{"saved", [][]byte{[]byte("42")}, []byte("42")},
		{"replaced", [][]byte{[]byte("41"), []byte("42")}, []byte("42")},
		{"empty value is kept", [][]byte{{}}, []byte{}},
		{"nil removes", [][]byte{[]byte("42"), nil}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := openTemp(t, nil)
			for _, v := range tt.saves {
				if err := s.Save("telegram.offset", v); err != nil {
					t.Fatalf("save: %v", err)
				}
			}
			closeStore(t, s)
			s = openAt(t, path, nil)
			defer closeStore(t, s)
			got, err := s.Load("telegram.offset")
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if (got == nil) != (tt.want == nil) || !bytes.Equal(got, tt.want) {
				t.Errorf("load = %q (nil %t), want %q (nil %t)", got, got == nil, tt.want, tt.want == nil)
			}
		})
	}
}

func TestStateCopies(t *testing.T) {
	s, _ := openTemp(t, nil)
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

func TestTurns(t *testing.T) {
	s, path := openTemp(t, nil)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	first := InFlight{ID: "t1", Key: "slack:T:C", Platform: "slack", Channel: "C", Thread: "1.0", ReplyTo: "1.0", Started: t0}
	second := InFlight{ID: "t0", Key: "http:x", Platform: "http", Channel: "x", Started: t0.Add(time.Minute)}
	for _, turn := range []InFlight{second, first} {
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
	s = openAt(t, path, nil)
	defer closeStore(t, s)

	got, err := s.InFlightTurns()
	if err != nil {
		t.Fatalf("in flight: %v", err)
	}
	want := []InFlight{first, second} // oldest first
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
		t.Fatalf("in flight: %v", err)
	}
	if len(got) != 1 || got[0].ID != "t0" {
		t.Errorf("after ending t1: %+v, want only t0", got)
	}
}

// TestTurnRecordedBeforeAgentGroups: a turn written before records had the
// agent's process group reads with none (no schema change was needed).
func TestTurnRecordedBeforeAgentGroups(t *testing.T) {
	s, _ := openTemp(t, nil)
	old := `{"ID":"t9","Key":"slack:T:C","Platform":"slack","Channel":"C","Thread":"","ReplyTo":"1.0",` +
		`"AnswerChannel":"","AnswerThread":"","AnswerID":"","Started":"2026-03-01T10:00:00Z"}`
	err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketTurns).Put([]byte("t9"), []byte(old)) })
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.InFlightTurns()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "t9" || got[0].ReplyTo != "1.0" || got[0].AgentGroup != 0 || got[0].AgentStart != 0 || got[0].Stream {
		t.Errorf("old record read as %+v", got)
	}
}

func TestNoTurnsInFlight(t *testing.T) {
	s, _ := openTemp(t, nil)
	got, err := s.InFlightTurns()
	if err != nil || len(got) != 0 {
		t.Errorf("fresh store: %+v, %v; want none", got, err)
	}
}

// errorsIs is errors.Is with a readable failure.
func errorsIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

func TestUpdateConversationKeepsConcurrentChanges(t *testing.T) {
	s, _ := openTemp(t, nil)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := s.UpdateConversation("k", func(c *Conversation) bool { c.Model = "m"; return true }); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := s.UpdateConversation("k", func(c *Conversation) bool { c.SessionID = "s" + string(rune('a'+i%26)); return true }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	c, err := s.Conversation("k")
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "m" || c.SessionID == "" || c.LastUsed.IsZero() {
		t.Errorf("an update undid another: %+v", c)
	}
	if err := s.UpdateConversation("other", func(*Conversation) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Conversation("other"); !c.LastUsed.IsZero() {
		t.Errorf("fn returning false stored %+v", c)
	}
}

func TestApprovals(t *testing.T) {
	s, _ := openTemp(t, nil)
	t0 := time.Now()
	a := Approval{ID: "b", Key: "slack:T:C", Platform: "slack", Tool: "Bash", ArgsDigest: "sha256:00", AskedBy: "slack:U1", Asked: t0}
	if err := s.SaveApproval(a); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveApproval(Approval{ID: "a", Tool: "Write", Asked: t0.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	a.Decision, a.Reason, a.DecidedBy, a.Decided = "allow", "answered", "slack:U1", t0.Add(time.Second)
	if err := s.SaveApproval(a); err != nil {
		t.Fatal(err)
	}
	all, err := s.Approvals(false)
	if err != nil || len(all) != 2 || all[0].ID != "a" || all[1].Decision != "allow" || !all[1].Decided.Equal(a.Decided) {
		t.Fatalf("Approvals(false) = %+v, %v", all, err)
	}
	pending, err := s.Approvals(true)
	if err != nil || len(pending) != 1 || pending[0].ID != "a" {
		t.Fatalf("Approvals(true) = %+v, %v", pending, err)
	}
	if err := s.SaveApproval(Approval{}); err == nil {
		t.Error("an approval without id was saved")
	}
}
