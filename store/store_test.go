package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// testKey is a conversation key for tests that need one.
var testKey = NewKey("slack", "T", "C", "")

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
func openAt(t testing.TB, path string, clock *fakeClock) *Bolt {
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
func openTemp(t *testing.T, clock *fakeClock) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "golem.db")
	s := openAt(t, path, clock)
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func closeStore(t testing.TB, s *Bolt) {
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

// errorsIs is errors.Is with a readable failure.
func errorsIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}
