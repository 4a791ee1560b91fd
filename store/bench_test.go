package store

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkOpenLookup100k opens a file of 100,000 conversations, reads one
// session and closes it again; the target is under 100 ms per open+lookup.
func BenchmarkOpenLookup100k(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "golem.db")
	s := openAt(b, path, nil)
	used := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		bucket := tx.Bucket(bucketConversations)
		for i := range n {
			c := Conversation{
				Engine:    "claude-code",
				SessionID: fmt.Sprintf("%08x-1b2c-4d5e-8f90-%012x", i, i),
				LastUsed:  used,
			}
			raw, err := encodeConversation(c)
			if err != nil {
				return err
			}
			if err := bucket.Put([]byte(NewKey("slack", "T0123456", fmt.Sprintf("C%08d", i), "").String()), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	closeStore(b, s)
	key := NewKey("slack", "T0123456", fmt.Sprintf("C%08d", n/2), "")

	for b.Loop() {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		c, err := s.Conversation(key)
		if err != nil || c.SessionID == "" {
			b.Fatalf("lookup: %+v, %v", c, err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarkSeen(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "golem.db"), nil)
	defer closeStore(b, s)
	i := 0
	for b.Loop() {
		i++
		if _, err := s.MarkSeen(fmt.Sprintf("Ev%012d", i), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarkSeenParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "golem.db"), nil)
	defer closeStore(b, s)
	var next atomic.Int64
	b.SetParallelism(16) // many chat events arriving at once
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.MarkSeen(fmt.Sprintf("Ev%012d", next.Add(1)), time.Hour); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkSaveConversation(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "golem.db"), nil)
	defer closeStore(b, s)
	i := 0
	for b.Loop() {
		i++
		c := Conversation{Key: NewKey("slack", "T0123456", fmt.Sprintf("C%08d", i%1000), ""), SessionID: fmt.Sprintf("sess-%d", i)}
		if err := s.SaveConversation(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSaveConversationParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "golem.db"), nil)
	defer closeStore(b, s)
	var next atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			c := Conversation{Key: NewKey("slack", "T0123456", fmt.Sprintf("C%08d", i%1000), ""), SessionID: fmt.Sprintf("sess-%d", i)}
			if err := s.SaveConversation(c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkConversationLookup(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "golem.db"), nil)
	defer closeStore(b, s)
	if err := s.SaveConversation(Conversation{Key: NewKey("slack", "T", "C", ""), SessionID: "sess"}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Conversation(NewKey("slack", "T", "C", "")); err != nil {
			b.Fatal(err)
		}
	}
}
