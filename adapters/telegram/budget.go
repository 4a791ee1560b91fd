package telegram

import (
	"context"
	"sync"
	"time"
)

// class is what a message call is for. It orders the calls that wait for
// the bot's budget, and each class leaves some of that budget to the
// classes before it.
type class int

const (
	// classNew is the first message of an answer, a command's answer or a
	// notice: the first thing a person sees after writing.
	classNew class = iota
	// classMust is everything that must arrive but may arrive later: a
	// continuation message, a final text, tool activity.
	classMust
	// classEdit is an intermediate edit or draft of text the person can
	// already see; the only class the streamer may skip (it coalesces).
	classEdit
	nClass
)

func (c class) String() string {
	switch c {
	case classNew:
		return "new"
	case classMust:
		return "must"
	}
	return "edit"
}

// budget is the adapter's one flood budget. Every message call into a chat
// (new answers, edits, continuations, tool activity, notices, drafts) and
// every retry of one takes a slot of that chat and a token of the bot:
//
//   - a chat holds one call at a time, and its next call starts no sooner
//     than its interval after the previous one was answered (Telegram
//     counts a call when it arrives, which is before it is answered, so
//     the spacing holds there whatever the network's delay); a 429 holds
//     the chat for its retry_after;
//   - the bot has a token bucket (rate a second, burst tokens) shared by
//     all chats; waiting calls get tokens by class, then in arrival order,
//     and a call of class c only takes a token while the bucket keeps
//     reserve[c] for the classes before it, so a wave of new answers finds
//     tokens even while every other chat wants edits.
//
// A call whose chat is not ready never holds up a call into another chat.
// The budget holds no goroutine; state of chats gone quiet is dropped.
type budget struct {
	private, group time.Duration // a chat's spacing after an answered call
	rate, burst    float64
	reserve        [nClass]float64

	mu      sync.Mutex
	tokens  float64
	at      time.Time // tokens is as of at
	chats   map[int64]*chatSlot
	sweepAt int // len(chats) at which quiet chats are dropped
	waiting [nClass][]*waiter
	timer   *time.Timer
	wakeAt  time.Time
}

// chatSlot is one chat's state.
type chatSlot struct {
	every time.Duration
	next  time.Time // no call starts before
	busy  bool      // a call is in flight
	users int       // waiters and calls in flight; guarded by budget.mu
}

type waiter struct {
	chat    *chatSlot
	class   class
	ready   chan struct{}
	granted bool
}

// minSweep is the number of chats below which none is dropped.
const minSweep = 1024

// newBudget returns a budget spacing private chats' calls by private and
// groups' by group, and the bot's by a bucket of rate a second holding
// burst tokens. Edits leave three quarters of the bucket to the other
// classes, continuations and final texts a quarter to new answers: the
// tokens an edit leaves are what a wave of new answers goes out on (with
// 100 first texts in two seconds, a reserve of half the burst still left
// the median new answer waiting 240 ms).
func newBudget(private, group time.Duration, rate float64, burst int) *budget {
	b := &budget{
		private: private, group: group, rate: rate, burst: float64(burst),
		tokens: float64(burst), at: time.Now(),
		chats: map[int64]*chatSlot{}, sweepAt: minSweep,
	}
	b.reserve[classMust] = float64(burst / 4)
	b.reserve[classEdit] = float64(burst * 3 / 4)
	return b
}

// slot is one granted call into a chat; done must be called once the
// call is answered (or has failed).
type slot struct {
	b    *budget
	chat *chatSlot
}

// take waits until a call of class c may go into chat: the chat is ready
// and the bot's bucket has a token for c. It returns ctx's error if ctx
// ends first.
func (b *budget) take(ctx context.Context, chat int64, c class) (*slot, error) {
	b.mu.Lock()
	cs := b.chatLocked(chat)
	cs.users++
	w := &waiter{chat: cs, class: c, ready: make(chan struct{})}
	b.waiting[c] = append(b.waiting[c], w)
	b.dispatchLocked(time.Now())
	b.mu.Unlock()
	select {
	case <-w.ready:
		return &slot{b: b, chat: cs}, nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		if w.granted { // granted meanwhile: hand the slot back unused
			cs.busy = false
			b.dispatchLocked(time.Now())
		} else {
			q := b.waiting[c]
			for i, x := range q {
				if x == w {
					b.waiting[c] = append(q[:i:i], q[i+1:]...)
					break
				}
			}
		}
		cs.users--
		return nil, ctx.Err()
	}
}

// done ends the call once it is answered (or has failed): the chat's next
// call may start its interval from now.
func (s *slot) done() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	s.chat.busy = false
	s.chat.users--
	s.chat.next = later(s.chat.next, now.Add(s.chat.every))
	b.dispatchLocked(now)
}

// hold keeps every call out of chat for d from now: Telegram answered 429
// with retry_after d, and refuses the chat until it has passed.
func (b *budget) hold(chat int64, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	cs := b.chatLocked(chat)
	cs.next = later(cs.next, now.Add(d))
	b.dispatchLocked(now)
}

// tryNow takes a token of the bot only if one is free beyond every
// reserve and nobody waits; for best-effort calls (the typing action).
func (b *budget) tryNow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.waiting {
		if len(q) > 0 {
			return false
		}
	}
	b.refillLocked(time.Now())
	if b.tokens < 1+b.reserve[classEdit] {
		return false
	}
	b.tokens--
	return true
}

func (b *budget) chatLocked(id int64) *chatSlot {
	cs := b.chats[id]
	if cs == nil {
		if len(b.chats) >= b.sweepAt {
			b.sweepLocked()
		}
		every := b.private
		if id < 0 { // group and supergroup ids are negative
			every = b.group
		}
		cs = &chatSlot{every: every}
		b.chats[id] = cs
	}
	return cs
}

// sweepLocked drops the chats nobody uses whose next call could start
// now: a new slot for such a chat behaves as the old one would. The next
// sweep waits until the map has doubled, so sweeping costs O(1) per chat
// added.
func (b *budget) sweepLocked() {
	now := time.Now()
	for id, cs := range b.chats {
		if cs.users == 0 && !now.Before(cs.next) {
			delete(b.chats, id)
		}
	}
	b.sweepAt = max(minSweep, 2*len(b.chats))
}

func (b *budget) refillLocked(now time.Time) {
	if now.After(b.at) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
		b.at = now
	}
}

// dispatchLocked grants every waiter that may go now, by class and then
// arrival, and arms the timer for the earliest moment another may.
func (b *budget) dispatchLocked(now time.Time) {
	b.refillLocked(now)
	var wake time.Time
	for c := range nClass {
		need := 1 + b.reserve[c]
		q := b.waiting[c]
		kept := q[:0]
		for _, w := range q {
			cs := w.chat
			switch {
			case cs.busy:
				// done will dispatch again.
			case now.Before(cs.next):
				wake = earliest(wake, later(cs.next, b.tokenAt(now, need)))
			case b.tokens < need:
				wake = earliest(wake, b.tokenAt(now, need))
			default:
				b.tokens--
				cs.busy = true
				w.granted = true
				close(w.ready)
				continue
			}
			kept = append(kept, w)
		}
		clear(q[len(kept):])
		b.waiting[c] = kept
	}
	b.armLocked(now, wake)
}

// tokenAt is when the bucket will hold need tokens, if nobody takes one.
func (b *budget) tokenAt(now time.Time, need float64) time.Time {
	if b.tokens >= need {
		return now
	}
	return now.Add(time.Duration((need - b.tokens) / b.rate * float64(time.Second)))
}

func (b *budget) armLocked(now, wake time.Time) {
	if wake.IsZero() {
		return
	}
	if b.timer != nil {
		if !wake.Before(b.wakeAt) {
			return // an earlier wake is armed; it dispatches again
		}
		b.timer.Stop()
	}
	b.wakeAt = wake
	b.timer = time.AfterFunc(wake.Sub(now), b.fire)
}

func (b *budget) fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	b.dispatchLocked(time.Now())
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
