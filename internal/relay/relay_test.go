package relay

import (
	"runtime"
	"slices"
	"sync"
	"testing"
)

// log records deliveries per key.
type log struct {
	mu  sync.Mutex
	got map[string][]int
	at  chan string // receives the key of each delivery, if set
}

func newLog() *log { return &log{got: map[string][]int{}} }

func (l *log) deliver(key string, n int) {
	l.mu.Lock()
	l.got[key] = append(l.got[key], n)
	l.mu.Unlock()
	if l.at != nil {
		l.at <- key
	}
}

func (l *log) of(key string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got[key])
}

// gated returns a prepare that waits for gate, then yields n.
func gated(gate <-chan struct{}, n int, keep bool) func() (int, bool) {
	return func() (int, bool) {
		<-gate
		return n, keep
	}
}

func TestItemsOfAKeyKeepTheirOrderWhateverTheirPreparation(t *testing.T) {
	l := newLog()
	r := New(l.deliver)
	var gates []chan struct{}
	for i := range 5 {
		g := make(chan struct{})
		gates = append(gates, g)
		r.Add("chat", gated(g, i, true))
	}
	for i := len(gates) - 1; i >= 0; i-- { // the last one is ready first
		close(gates[i])
	}
	r.Close()
	if got := l.of("chat"); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("delivered %v, want 0..4 in order", got)
	}
}

func TestASlowKeyHoldsUpNoOther(t *testing.T) {
	l := newLog()
	l.at = make(chan string, 10)
	r := New(l.deliver)
	slow := make(chan struct{})
	r.Add("slow", gated(slow, 1, true)) // a download that takes long
	r.Put("fast", 2)
	if k := <-l.at; k != "fast" {
		t.Fatalf("first delivery for %q, want fast", k)
	}

	// A delivery that blocks holds up its own key only.
	release := make(chan struct{})
	r2 := New(func(key string, n int) {
		if key == "stuck" {
			<-release
		}
		l.deliver(key, n)
	})
	r2.Put("stuck", 3)
	r2.Put("stuck", 4)
	r2.Put("free", 5)
	if k := <-l.at; k != "free" {
		t.Fatalf("delivery for %q, want free", k)
	}
	if r2.Idle("stuck") {
		t.Error("a key with a delivery under way is idle")
	}
	close(release)
	close(slow)
	r.Close()
	r2.Close()
	if got := l.of("stuck"); !slices.Equal(got, []int{3, 4}) {
		t.Errorf("stuck delivered %v, want [3 4]", got)
	}
}

func TestADroppedItemLetsTheNextOneGo(t *testing.T) {
	l := newLog()
	r := New(l.deliver)
	g := make(chan struct{})
	r.Add("chat", gated(g, 1, false))
	r.Put("chat", 2)
	close(g)
	r.Close()
	if got := l.of("chat"); !slices.Equal(got, []int{2}) {
		t.Errorf("delivered %v, want only [2]", got)
	}
}

func TestIdleKeysAreForgotten(t *testing.T) {
	l := newLog()
	l.at = make(chan string, 100)
	r := New(l.deliver)
	if !r.Idle("a") {
		t.Error("a key never used is not idle")
	}
	for i := range 50 {
		r.Put(string(rune('a'+i%26)), i)
	}
	for range 50 {
		<-l.at
	}
	r.Close()
	if n := r.pending(); n != 0 {
		t.Errorf("%d keys remembered after every item was delivered", n)
	}
	if !r.Idle("a") {
		t.Error("a key whose items were delivered is not idle")
	}
}

func TestCloseWaitsForPendingItemsThenRefuses(t *testing.T) {
	l := newLog()
	r := New(l.deliver)
	g := make(chan struct{})
	r.Add("chat", gated(g, 1, true))
	r.Put("chat", 2)
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while an item was still being prepared")
	default:
	}
	close(g)
	<-closed
	if got := l.of("chat"); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("delivered %v by Close, want [1 2]", got)
	}
	if r.Add("chat", gated(g, 3, true)) || r.Put("other", 4) {
		t.Error("Add after Close took an item")
	}
	r.Close() // twice is fine
	if got := l.of("chat"); len(got) != 2 {
		t.Errorf("an item added after Close was delivered: %v", got)
	}
}

// FuzzOrder adds items to a few keys, lets their preparations finish in an
// order the input chooses, drops some, and checks that every key got its
// kept items exactly once and in the order they were added.
func FuzzOrder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, []byte{7, 6, 5, 4, 3, 2, 1, 0})
	f.Add([]byte{0, 0, 0, 4, 0, 8, 0}, []byte{3, 1, 2})
	f.Add([]byte{1, 5, 9, 13}, []byte{})
	f.Fuzz(func(t *testing.T, ops, release []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		l := newLog()
		r := New(l.deliver)
		want := map[string][]int{}
		gates := make([]chan struct{}, len(ops))
		for i, op := range ops {
			key := string(rune('a' + op&3))
			keep := op&4 == 0
			gates[i] = make(chan struct{})
			if keep {
				want[key] = append(want[key], i)
			}
			r.Add(key, gated(gates[i], i, keep))
		}
		// Release in the order release names, then the rest.
		opened := make([]bool, len(gates))
		for _, b := range release {
			if i := int(b) % max(len(gates), 1); i < len(gates) && !opened[i] {
				opened[i] = true
				close(gates[i])
				runtime.Gosched()
			}
		}
		for i, g := range gates {
			if !opened[i] {
				close(g)
			}
		}
		r.Close()
		for key, w := range want {
			if got := l.of(key); !slices.Equal(got, w) {
				t.Errorf("key %s: delivered %v, want %v", key, got, w)
			}
		}
		for key, got := range l.got {
			if len(want[key]) == 0 && len(got) > 0 {
				t.Errorf("key %s: delivered dropped items %v", key, got)
			}
		}
		if n := r.pending(); n != 0 {
			t.Errorf("%d keys remembered after Close", n)
		}
	})
}

// TestStress has many goroutines add at once, each to a key of its own,
// with preparations that yield now and then, and checks the order per key
// and that nothing is lost or repeated (run it under -race).
func TestStress(t *testing.T) {
	const adders, items = 8, 500
	type item struct{ adder, n int }
	var mu sync.Mutex
	got := map[int][]int{}
	r := New(func(_ int, it item) {
		mu.Lock()
		got[it.adder] = append(got[it.adder], it.n)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for a := range adders {
		wg.Go(func() {
			for n := range items {
				r.Add(a, func() (item, bool) {
					if n%3 == 0 {
						runtime.Gosched()
					}
					return item{a, n}, true
				})
				if n%50 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	r.Close()
	for a := range adders {
		if len(got[a]) != items {
			t.Fatalf("adder %d: %d items delivered, want %d", a, len(got[a]), items)
		}
		for i, n := range got[a] {
			if n != i {
				t.Fatalf("adder %d: item %d delivered at position %d", a, n, i)
			}
		}
	}
	if n := r.pending(); n != 0 {
		t.Errorf("%d keys remembered after Close", n)
	}
}
