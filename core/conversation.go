package core

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/store"
)

// maxIdleConversations bounds the idle conversations a Dispatcher keeps in
// memory; past it the idle ones are forgotten (all they hold is whether
// they were told that their engine cannot steer, so at worst one is told
// again).
const maxIdleConversations = 10000

// conversation is everything core holds in memory for one conversation:
// the messages waiting for a turn, the running turn with the messages being
// steered into it, the generation that /new and /engine bump, and whether
// it was told that its engine cannot steer. It is one unit, so that a
// conversation can change hands (between replicas) as one thing; what is
// lasting (the session, the settings, the turn in flight) is in the store.
//
// Its fields are guarded by its own mu. Dispatcher.mu guards only the map
// of conversations; where both are held, Dispatcher.mu is taken first.
type conversation struct {
	key store.Key

	mu      sync.Mutex
	queue   []Message
	running *running
	// generation changes on /new and /engine, so a turn that was running
	// then does not store its (now forgotten) session afterwards.
	generation int
	// toldNoSteer: the conversation was told that its engine cannot take
	// messages while it answers (BusySteer), so it is told once.
	toldNoSteer bool
	// exiting is closed once the last turn's agent has exited, while it
	// is on its way out after its answer (nil otherwise): the next turn
	// prepares meanwhile and starts its own agent only after it.
	exiting <-chan struct{}
	// quiet, when not nil, is closed once nothing runs or waits (see
	// RunPrompt, which waits for it).
	quiet chan struct{}
	// notices, while not nil, is closed once the interrupted notices of a
	// takeover are posted (Host.TakeOver): the next turn waits for it, so
	// its answer comes after them.
	notices <-chan struct{}
}

type running struct {
	started time.Time
	stop    func()
	// interrupt stops the turn for a newer message (BusyInterrupt).
	interrupt func()
	// engine is the turn's engine once it is known ("" before).
	engine string
	// steer takes messages into the turn while it runs (BusySteer on an
	// engine that can); nil before the run started and once it ends.
	steer *steering
	// queued is true until the turn has one of MaxConcurrent's slots: it
	// is a message waiting, for Load.
	queued bool
	// givenUp: the replica lost its membership (Host.GiveUp) and stopped
	// the turn; one that had not begun leaves its message to the next
	// owner, quietly.
	givenUp bool
	// tap is what the operator's view watches of the answer (Watch); nil
	// until the answer's output exists.
	tap *tap
}

// working reports whether c has a turn running or messages waiting: its
// worker goroutine is on. Called with c.mu held.
func (c *conversation) working() bool { return c.running != nil || len(c.queue) > 0 }

// idle reports whether nothing runs, exits or waits in c: it may be
// forgotten. Called with c.mu held.
func (c *conversation) idle() bool { return !c.working() && c.exiting == nil && c.notices == nil }

// engine is the running turn's engine, "" when none runs or it is not
// known yet. Called with c.mu held.
func (c *conversation) engine() string {
	if c.running == nil {
		return ""
	}
	return c.running.engine
}

// waiting is how many of c's messages wait for a turn: those queued, and
// a turn still waiting for a slot. Called with c.mu held.
func (c *conversation) waiting() int {
	n := len(c.queue)
	if c.running != nil && c.running.queued {
		n++
	}
	return n
}

// sameGeneration reports whether /new or /engine has not come since a turn
// of generation gen started.
func (c *conversation) sameGeneration(gen int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation == gen
}

// conversationLocked returns key's conversation, made when it is new.
// Called with d.mu held. Making one past maxIdleConversations first
// forgets the idle ones.
func (d *Dispatcher) conversationLocked(key store.Key) *conversation {
	if c := d.convs[key]; c != nil {
		return c
	}
	if len(d.convs) >= maxIdleConversations {
		for k, c := range d.convs {
			c.mu.Lock()
			if c.idle() {
				delete(d.convs, k)
			}
			c.mu.Unlock()
		}
	}
	c := &conversation{key: key}
	d.convs[key] = c
	return c
}

// find returns key's conversation, nil when core holds nothing of it.
func (d *Dispatcher) find(key store.Key) *conversation {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.convs[key]
}

// conversations are the conversations held now, for a walk over them
// without Dispatcher.mu.
func (d *Dispatcher) conversations() []*conversation {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs := make([]*conversation, 0, len(d.convs))
	for _, c := range d.convs {
		cs = append(cs, c)
	}
	return cs
}

// queueInOrder adds m to queue in its platform's order: before the first
// waiting message the platform sent after it. Messages reach core in the
// order replicas took them, which among replicas can differ from the
// platform's by how long one took; while both wait, the platform's wins.
// Without comparable ids (HTTP, the terminal) m goes last.
func queueInOrder(queue []Message, m Message) []Message {
	i := len(queue)
	for i > 0 && sentBefore(m, queue[i-1]) {
		i--
	}
	return slices.Insert(queue, i, m)
}

// sentBefore reports whether the platform sent a before b, in one place:
// their ids are its increasing numbers (a Slack ts "1733112345.000100", a
// Telegram message_id, a Discord snowflake). false when either is not one.
func sentBefore(a, b Message) bool {
	if a.Platform != b.Platform || a.Channel != b.Channel {
		return false
	}
	ai, af, ok1 := decimal(a.ID)
	bi, bf, ok2 := decimal(b.ID)
	if !ok1 || !ok2 {
		return false
	}
	if len(ai) != len(bi) {
		return len(ai) < len(bi)
	}
	if ai != bi {
		return ai < bi
	}
	return af < bf // Slack's fractions have six digits
}

// decimal splits a non-negative decimal number without leading zeros into
// its integer and fraction digits.
func decimal(s string) (whole, frac string, ok bool) {
	whole, frac, _ = strings.Cut(s, ".")
	if whole == "" || (len(whole) > 1 && whole[0] == '0') {
		return "", "", false
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return "", "", false
		}
	}
	return whole, frac, true
}
