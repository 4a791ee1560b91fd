package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// holdWriter occupies the writer goroutine until the returned function is
// called, so that the writes submitted meanwhile queue up and commit as one
// batch.
func holdWriter(t *testing.T, s *Bolt) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.update(func(*bolt.Tx) error {
			close(entered)
			<-gate
			return nil
		})
	}()
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("held write: %v", err)
		}
	}
}

// waitQueued polls until n writes wait for the writer.
func waitQueued(t *testing.T, s *Bolt, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.writes) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", len(s.writes), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBatchWithAFailingWrite(t *testing.T) {
	s, path := openTemp(t, nil)
	release := holdWriter(t, s)

	errBoom := errors.New("boom")
	type result struct {
		name  string
		first bool
		err   error
	}
	results := make(chan result, 8)
	const good = 5
	for i := range good {
		go func() {
			first, err := s.MarkSeen(fmt.Sprint("event-", i), time.Hour)
			results <- result{fmt.Sprint("event-", i), first, err}
		}()
	}
	waitQueued(t, s, good)
	go func() {
		results <- result{name: "failing", err: s.update(func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketState).Put([]byte("partial"), []byte("x")); err != nil {
				return err
			}
			return errBoom
		})}
	}()
	waitQueued(t, s, good+1)
	release()

	for range good + 1 {
		r := <-results
		switch {
		case r.name == "failing":
			if !errors.Is(r.err, errBoom) {
				t.Errorf("failing write: %v, want boom", r.err)
			}
		case r.err != nil || !r.first:
			t.Errorf("%s: first %t, %v; want first and no error", r.name, r.first, r.err)
		}
	}
	closeStore(t, s)
	s = openAt(t, path, nil)
	defer closeStore(t, s)
	if v, err := s.Load("partial"); v != nil || err != nil {
		t.Errorf("the failed write left %q, %v", v, err)
	}
	for i := range good {
		if first, err := s.MarkSeen(fmt.Sprint("event-", i), time.Hour); first || err != nil {
			t.Errorf("event-%d after reopen: first %t, %v; want a redelivery", i, first, err)
		}
	}
}

func TestCloseFinishesQueuedWrites(t *testing.T) {
	s, path := openTemp(t, nil)
	release := holdWriter(t, s)
	const n = 4
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.Save(fmt.Sprint("k", i), []byte("v")) }()
	}
	waitQueued(t, s, n)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Let Close start before the writer may go on.
	deadline := time.Now().Add(10 * time.Second)
	for !isClosed(s) {
		if time.Now().After(deadline) {
			t.Fatal("close did not start")
		}
		time.Sleep(time.Millisecond)
	}
	release()
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("queued save: %v", err)
		}
	}
	if err := s.Save("late", []byte("v")); !errors.Is(err, ErrClosed) {
		t.Errorf("save after close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}

	s = openAt(t, path, nil)
	defer closeStore(t, s)
	for i := range n {
		if v, err := s.Load(fmt.Sprint("k", i)); string(v) != "v" || err != nil {
			t.Errorf("k%d after reopen: %q, %v", i, v, err)
		}
	}
}

func isClosed(s *Bolt) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}
