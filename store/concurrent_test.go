package store

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentUse runs every kind of call from many goroutines at once
// (under -race) and checks that MarkSeen gives exactly one "first" per id.
func TestConcurrentUse(t *testing.T) {
	s, _ := openTemp(t, nil)
	const (
		workers = 8
		ids     = 15
	)
	firsts := make([][]bool, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		firsts[w] = make([]bool, ids)
		wg.Go(func() {
			key := fmt.Sprintf("slack:T:C%d", w%3) // shared by several workers
			for i := range ids {
				first, err := s.MarkSeen(fmt.Sprint("event-", i), time.Hour)
				if err != nil {
					errs <- err
					return
				}
				firsts[w][i] = first
				c, err := s.Conversation(key)
				if err != nil {
					errs <- err
					return
				}
				c.SessionID = fmt.Sprintf("sess-%d-%d", w, i)
				c.LastUsed = time.Time{}
				if err := s.SaveConversation(c); err != nil {
					errs <- err
					return
				}
				turn := fmt.Sprintf("turn-%d-%d", w, i)
				if err := s.BeginTurn(InFlight{ID: turn, Key: key, Started: time.Now()}); err != nil {
					errs <- err
					return
				}
				if _, err := s.InFlightTurns(); err != nil {
					errs <- err
					return
				}
				if err := s.EndTurn(turn); err != nil {
					errs <- err
					return
				}
				if err := s.Save(fmt.Sprint("w", w), []byte(fmt.Sprint(i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range ids {
		n := 0
		for w := range workers {
			if firsts[w][i] {
				n++
			}
		}
		if n != 1 {
			t.Errorf("event-%d was first %d times, want once", i, n)
		}
	}
	if turns, err := s.InFlightTurns(); err != nil || len(turns) != 0 {
		t.Errorf("turns left in flight: %+v, %v", turns, err)
	}
	for w := range workers {
		v, err := s.Load(fmt.Sprint("w", w))
		if err != nil || string(v) != fmt.Sprint(ids-1) {
			t.Errorf("state of worker %d = %q, %v; want %d", w, v, err, ids-1)
		}
	}
}
