package telegram

import (
	"context"
	"sync"
	"time"
)

// Priorities of waiters for a budget: a new answer goes out before tool
// activity, and both before an edit of text already visible, so the first
// text of a new answer is not stuck behind other chats' edits.
const (
	prioSend = iota
	prioActivity
	prioEdit
	nPrio
)

// gate spaces grants at least every apart, serving waiters by priority,
// then in arrival order. It holds no goroutine while idle.
type gate struct {
	every time.Duration

	mu    sync.Mutex
	last  time.Time // the latest grant
	queue [nPrio][]*waiter
	timer *time.Timer
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

func newGate(every time.Duration) *gate { return &gate{every: every} }

// wait blocks until the gate grants a turn to a waiter of priority prio,
// or ctx is done.
func (g *gate) wait(ctx context.Context, prio int) error {
	g.mu.Lock()
	now := time.Now()
	if g.idleLocked() && now.Sub(g.last) >= g.every {
		g.last = now
		g.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{})}
	g.queue[prio] = append(g.queue[prio], w)
	g.armLocked(now)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if w.granted {
			return nil
		}
		q := g.queue[prio]
		for i, x := range q {
			if x == w {
				g.queue[prio] = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		return ctx.Err()
	}
}

// tryNow takes a turn only if one is free at once and nobody waits; for
// best-effort calls such as the typing action.
func (g *gate) tryNow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if g.idleLocked() && now.Sub(g.last) >= g.every {
		g.last = now
		return true
	}
	return false
}

func (g *gate) idleLocked() bool {
	for _, q := range g.queue {
		if len(q) > 0 {
			return false
		}
	}
	return true
}

func (g *gate) armLocked(now time.Time) {
	if g.timer == nil {
		g.timer = time.AfterFunc(max(0, g.last.Add(g.every).Sub(now)), g.release)
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.timer = nil
	now := time.Now()
	if now.Sub(g.last) >= g.every {
		for p := range g.queue {
			if len(g.queue[p]) > 0 {
				w := g.queue[p][0]
				g.queue[p] = g.queue[p][1:]
				w.granted = true
				close(w.ready)
				g.last = now
				break
			}
		}
	}
	if !g.idleLocked() {
		g.armLocked(now)
	}
}

// budgets are the adapter's send budgets: one gate per chat (private chats
// about 1 message a second, groups 20 a minute; edits count) and one
// shared by all chats (about 30 requests a second). Send, Edit and
// SendActivity wait on the chat's gate, then on the global one. Gates of
// chats that have gone quiet are dropped, so the map does not grow with
// every chat that ever wrote to the bot.
type budgets struct {
	private, group time.Duration
	global         *gate

	mu      sync.Mutex
	chats   map[int64]*chatGate
	sweepAt int // len(chats) at which quiet gates are dropped
}

// chatGate is a chat's gate and how many calls are using it; a gate in
// use is never dropped.
type chatGate struct {
	*gate
	users int // guarded by budgets.mu
}

// minSweep is the number of chats below which no gate is dropped.
const minSweep = 1024

func newBudgets(private, group, global time.Duration) *budgets {
	return &budgets{private: private, group: group, global: newGate(global), chats: map[int64]*chatGate{}, sweepAt: minSweep}
}

// acquire returns chat's gate, marked in use until release.
func (b *budgets) acquire(id int64) *chatGate {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.chats[id]
	if g == nil {
		if len(b.chats) >= b.sweepAt {
			b.sweepLocked()
		}
		every := b.private
		if id < 0 { // group and supergroup ids are negative
			every = b.group
		}
		g = &chatGate{gate: newGate(every)}
		b.chats[id] = g
	}
	g.users++
	return g
}

func (b *budgets) release(g *chatGate) {
	b.mu.Lock()
	g.users--
	b.mu.Unlock()
}

// sweepLocked drops the gates nobody uses whose last grant is at least
// their interval ago: a new gate for such a chat grants at once, as the
// old one would have. The next sweep waits until the map has doubled, so
// sweeping costs O(1) per chat added.
func (b *budgets) sweepLocked() {
	now := time.Now()
	for id, g := range b.chats {
		if g.users == 0 && g.quiet(now) {
			delete(b.chats, id)
		}
	}
	b.sweepAt = max(minSweep, 2*len(b.chats))
}

// quiet reports whether the gate holds no waiter and would grant at now.
func (g *gate) quiet(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idleLocked() && g.timer == nil && now.Sub(g.last) >= g.every
}

// wait blocks until chat may get one more message or edit.
func (b *budgets) wait(ctx context.Context, chat int64, prio int) error {
	g := b.acquire(chat)
	err := g.wait(ctx, prio)
	b.release(g)
	if err != nil {
		return err
	}
	return b.global.wait(ctx, prio)
}
