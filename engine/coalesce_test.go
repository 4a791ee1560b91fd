package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCoalescedShares: callers that arrive while a run is going share the
// next run instead of one run each, and every caller gets a run that began
// after it arrived (it sees what it would have seen running alone).
func TestCoalescedShares(t *testing.T) {
	const callers = 100
	var c coalesced
	var runs, ended atomic.Int64
	all := make(chan struct{})
	var arrived atomic.Int64
	job := func() error {
		n := runs.Add(1)
		if n == 1 {
			<-all // the first run lasts until every caller has come
		}
		ended.Store(n)
		return fmt.Errorf("run %d", n)
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range callers {
		wg.Go(func() {
			before := ended.Load()
			if arrived.Add(1) == callers {
				close(all)
			}
			var got int64
			if _, err := fmt.Sscanf(c.do(job).Error(), "run %d", &got); err != nil || got <= before {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d callers got a run that had ended before they came", bad.Load())
	}
	if n := runs.Load(); n > callers/2 {
		t.Errorf("%d runs for %d callers; want them shared", n, callers)
	}
	if err := c.do(func() error { return errors.New("fresh") }); err == nil || err.Error() != "fresh" {
		t.Errorf("a caller alone got %v, want its own run", err)
	}
}
