package engine

import (
	"sync"

	"github.com/golem-chat/golem/parser"
)

// backlog is an unbounded FIFO of events between a run's stdout reader and
// its consumer, so that the reader always reaches the terminal line however
// slow the consumer is: an interactive CLI (Claude Code with stream-json
// input) only exits once its stdin closes after that line. It holds no more
// than what the agent printed and the consumer has not taken yet.
type backlog struct {
	mu     sync.Mutex
	cond   sync.Cond
	events []parser.Event
	closed bool
}

func newBacklog() *backlog {
	b := &backlog{}
	b.cond.L = &b.mu
	return b
}

// push appends ev; never blocks.
func (b *backlog) push(ev parser.Event) {
	b.mu.Lock()
	b.events = append(b.events, ev)
	b.mu.Unlock()
	b.cond.Signal()
}

// close marks the end: next returns false once the events are taken.
func (b *backlog) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Signal()
}

// next waits for the oldest event; false after close and the last one.
func (b *backlog) next() (parser.Event, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.events) == 0 && !b.closed {
		b.cond.Wait()
	}
	if len(b.events) == 0 {
		return parser.Event{}, false
	}
	ev := b.events[0]
	b.events[0] = parser.Event{}
	b.events = b.events[1:]
	return ev, true
}
