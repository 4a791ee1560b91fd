package storetest

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/golem-chat/golem/store"
)

func testUpdateState(t *testing.T, open func() store.Store) {
	s := open()
	var saw []byte
	seen := false
	if err := s.UpdateState("u.k", func(old []byte) ([]byte, bool) { saw, seen = old, true; return []byte("a"), true }); err != nil {
		t.Fatal(err)
	}
	if !seen || saw != nil {
		t.Errorf("fn of an absent key got %q (nil %t), want nil", saw, saw == nil)
	}
	if err := s.UpdateState("u.k", func(old []byte) ([]byte, bool) { return append(old, 'b'), true }); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateState("u.k", func(old []byte) ([]byte, bool) { return []byte("ignored"), false }); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Load("u.k"); err != nil || string(v) != "ab" {
		t.Errorf("after updates: %q, %v; want ab", v, err)
	}
	big := bytes.Repeat([]byte("x"), store.MaxValue+1)
	if err := s.UpdateState("u.k", func([]byte) ([]byte, bool) { return big, true }); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("an update over MaxValue: %v, want ErrTooLarge", err)
	}
	if err := s.UpdateState("", func([]byte) ([]byte, bool) { return []byte("x"), true }); err == nil {
		t.Error("an update of the empty key succeeded")
	}
	closeStore(t, s)
	s = open()
	if v, err := s.Load("u.k"); err != nil || string(v) != "ab" {
		t.Errorf("reopened: %q, %v; want ab (a refused update changes nothing)", v, err)
	}
	if err := s.UpdateState("u.k", func([]byte) ([]byte, bool) { return nil, true }); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Load("u.k"); err != nil || v != nil {
		t.Errorf("after an update to nil: %q, %v; want absent", v, err)
	}
}

// Writers appending to one value at once: none loses another's change
// (the operator's audit from several replicas).
func testUpdateStateConcurrent(t *testing.T, open func() store.Store) {
	s := open()
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := s.UpdateState("u.list", func(old []byte) ([]byte, bool) {
				return append(old, byte('A'+i%26), ','), true
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	v, err := s.Load("u.list")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(v), ","); got != n {
		t.Errorf("%d of %d concurrent appends kept: %q", got, n, v)
	}
}
