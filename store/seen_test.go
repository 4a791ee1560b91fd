package store

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// seenCounts returns how many ids the seen bucket and its expiry index hold.
func seenCounts(t *testing.T, s *Bolt) (ids, index int) {
	t.Helper()
	err := s.db.View(func(tx *bolt.Tx) error {
		ids = tx.Bucket(bucketSeen).Stats().KeyN
		index = tx.Bucket(bucketSeenExpiry).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatalf("count seen ids: %v", err)
	}
	return ids, index
}

func TestMarkSeen(t *testing.T) {
	const ttl = time.Hour
	type step struct {
		advance time.Duration // clock moves first
		reopen  bool          // then Close and Open
		id      string
		want    bool // first time?
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"new id", []step{{id: "e1", want: true}}},
		{"redelivery", []step{{id: "e1", want: true}, {id: "e1", want: false}}},
		{"different ids", []step{{id: "e1", want: true}, {id: "e2", want: true}}},
		{"redelivery just before expiry", []step{{id: "e1", want: true}, {advance: ttl - time.Nanosecond, id: "e1", want: false}}},
		{"new again at expiry", []step{{id: "e1", want: true}, {advance: ttl, id: "e1", want: true}}},
		{"redelivery does not extend the ttl", []step{
			{id: "e1", want: true},
			{advance: ttl / 2, id: "e1", want: false},
			{advance: ttl / 2, id: "e1", want: true},
		}},
		{"redelivery after restart", []step{{id: "e1", want: true}, {advance: time.Minute, reopen: true, id: "e1", want: false}}},
		{"expired across restart", []step{{id: "e1", want: true}, {advance: 2 * ttl, reopen: true, id: "e1", want: true}}},
		{"expired twice", []step{
			{id: "e1", want: true},
			{advance: ttl, id: "e1", want: true},
			{advance: ttl, id: "e1", want: true},
			{id: "e1", want: false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			s, path := openTemp(t, clock)
			for i, st := range tt.steps {
				clock.Advance(st.advance)
				if st.reopen {
					closeStore(t, s)
					s = openAt(t, path, clock)
					t.Cleanup(func() { _ = s.Close() })
				}
				got, err := s.MarkSeen(st.id, ttl)
				if err != nil {
					t.Fatalf("step %d: mark seen: %v", i, err)
				}
				if got != st.want {
					t.Errorf("step %d: mark seen %s = %t, want %t", i, st.id, got, st.want)
				}
			}
			ids, index := seenCounts(t, s)
			if ids != index {
				t.Errorf("seen holds %d ids but its expiry index %d", ids, index)
			}
		})
	}
}

func TestOpenDropsExpiredSeenIDs(t *testing.T) {
	clock := newFakeClock()
	s, path := openTemp(t, clock)
	for i := range 25 {
		if _, err := s.MarkSeen(fmt.Sprintf("old-%d", i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.MarkSeen("young", time.Hour); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	clock.Advance(time.Minute)
	s = openAt(t, path, clock)
	defer closeStore(t, s)
	if ids, index := seenCounts(t, s); ids != 1 || index != 1 {
		t.Errorf("after reopen: %d ids, %d index entries; want only the young one", ids, index)
	}
	if first, err := s.MarkSeen("young", time.Hour); err != nil || first {
		t.Errorf("young id: first %t, %v; want a redelivery", first, err)
	}
}

func TestMarkSeenDropsExpiredIDsInBoundedSteps(t *testing.T) {
	clock := newFakeClock()
	s, _ := openTemp(t, clock)
	const old = 3*prunePerMark + 5
	for i := range old {
		if _, err := s.MarkSeen(fmt.Sprintf("old-%d", i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	for i := 0; ; i++ {
		before, _ := seenCounts(t, s)
		if _, err := s.MarkSeen(fmt.Sprintf("new-%d", i), time.Hour); err != nil {
			t.Fatal(err)
		}
		after, index := seenCounts(t, s)
		if after != index {
			t.Fatalf("seen holds %d ids but its expiry index %d", after, index)
		}
		if dropped := before + 1 - after; dropped > prunePerMark {
			t.Fatalf("one mark dropped %d ids, want at most %d", dropped, prunePerMark)
		}
		if after == i+1 { // only the new ids are left
			break
		}
		if i > old {
			t.Fatalf("after %d marks still %d ids, want %d", i+1, after, i+1)
		}
	}
}
