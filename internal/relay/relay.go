// Package relay hands items on in the order they arrived, one key at a
// time: the messages of one chat reach the dispatcher in the order the user
// sent them, and the short answers of one conversation reach the chat in
// the order golem gave them, while different chats and conversations run
// apart and a slow one holds up no other.
package relay

import "sync"

// Relay delivers the items added for a key one after another, in the order
// they were added, and the items of different keys independently. Each
// item may first be prepared (an attachment downloaded, an interaction
// deferred) on a goroutine of its own, so that preparations overlap and
// hold up no caller; only the hand-off waits its turn. A key is forgotten
// as soon as it has nothing pending, so memory grows with the items in
// flight, not with the keys ever seen. The zero Relay is not usable; make
// one with New.
type Relay[K comparable, T any] struct {
	deliver func(key K, item T)

	mu     sync.Mutex
	tails  map[K]chan struct{} // per key: closed when its last item added is done
	closed bool
	wg     sync.WaitGroup
}

// New returns a relay that hands items to deliver. deliver is called for
// one key at a time, in order, on a goroutine of the relay's, and for
// different keys concurrently; it must return for Close to return.
func New[K comparable, T any](deliver func(key K, item T)) *Relay[K, T] {
	return &Relay[K, T]{deliver: deliver, tails: map[K]chan struct{}{}}
}

// Add takes one item for key. prepare runs at once on a goroutine of its
// own and returns the item, or false to drop it; the item is handed to
// deliver once every item added for key before it has been delivered or
// dropped. Add never blocks. It reports false, and runs nothing, once
// Close has been called.
func (r *Relay[K, T]) Add(key K, prepare func() (T, bool)) bool {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	prev := r.tails[key]
	done := make(chan struct{})
	r.tails[key] = done
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer r.finish(key, done)
		item, ok := prepare()
		if prev != nil {
			<-prev
		}
		if ok {
			r.deliver(key, item)
		}
	}()
	return true
}

// Put takes an item that needs no preparation; see Add.
func (r *Relay[K, T]) Put(key K, item T) bool {
	return r.Add(key, func() (T, bool) { return item, true })
}

// finish marks an item done and forgets its key if nothing came after it.
func (r *Relay[K, T]) finish(key K, done chan struct{}) {
	r.mu.Lock()
	if r.tails[key] == done {
		delete(r.tails, key)
	}
	r.mu.Unlock()
	close(done)
}

// Idle reports whether key has nothing pending: no item being prepared,
// waiting or delivered. With one goroutine adding, an idle key stays idle
// until that goroutine adds to it again, so it may hand an item that
// needs no preparation on itself, in order, without a goroutine.
func (r *Relay[K, T]) Idle(key K) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, busy := r.tails[key]
	return !busy
}

// Close stops taking items and waits until every item added before it has
// been delivered or dropped. Preparations are not interrupted: a prepare
// or deliver that waits on something should also watch the context that
// ends with the relay's owner. Close may be called more than once.
func (r *Relay[K, T]) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

// pending is the number of keys with items in flight (for tests).
func (r *Relay[K, T]) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tails)
}
