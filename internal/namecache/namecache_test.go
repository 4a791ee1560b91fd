package namecache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestName(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	c := New(Options{Lookup: func(ctx context.Context, id string) (string, error) {
		calls.Add(1)
		<-release
		if id == "bad" {
			return "", errors.New("refused")
		}
		return "#" + id, nil
	}})
	if got := c.Name("C1"); got != "" {
		t.Errorf("an unknown id answered %q at once", got)
	}
	if got := c.Name("C1"); got != "" || calls.Load() > 1 {
		t.Errorf("asked again while the first lookup runs: %q, %d calls", got, calls.Load())
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for c.Name("C1") != "#C1" {
		if time.Now().After(deadline) {
			t.Fatal("the name was never learned")
		}
		time.Sleep(time.Millisecond)
	}
	if calls.Load() != 1 {
		t.Errorf("%d lookups for one id", calls.Load())
	}
	c.Name("bad")
	for calls.Load() != 2 {
		time.Sleep(time.Millisecond)
	}
	c.Name("bad")
	c.Name("bad")
	if calls.Load() != 2 {
		t.Errorf("a failed id was asked again at once: %d lookups", calls.Load())
	}
}

// TestConcurrent: many callers, a bounded number of lookups at once.
func TestConcurrent(t *testing.T) {
	var running, most atomic.Int32
	c := New(Options{Concurrent: 2, Lookup: func(ctx context.Context, id string) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		return id, nil
	}})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				c.Name(string(rune('a' + i%26)))
			}
		}()
	}
	wg.Wait()
	if most.Load() > 2 {
		t.Errorf("%d lookups ran at once, want at most 2", most.Load())
	}
}
