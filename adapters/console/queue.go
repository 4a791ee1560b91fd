package console

import (
	"sync"

	"github.com/golem-chat/golem/parser"
)

// eventQueue carries events from the dispatcher's sink to the printing
// loop. Push never blocks: the queue grows while the terminal is busy and
// drops everything once closed (the turn's answer is over or the console
// stopped), so a slow terminal can never stall the dispatcher. Safe for
// one pusher and one taker running concurrently.
type eventQueue struct {
	mu     sync.Mutex
	events []parser.Event
	closed bool
	ready  chan struct{} // capacity 1: a push happened since the last take
}

func newEventQueue() *eventQueue {
	return &eventQueue{ready: make(chan struct{}, 1)}
}

// push appends e unless the queue is closed. It is the message's Sink.
func (q *eventQueue) push(e parser.Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.events = append(q.events, e)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns the queued events, oldest first, and empties the queue.
func (q *eventQueue) take() []parser.Event {
	q.mu.Lock()
	out := q.events
	q.events = nil
	q.mu.Unlock()
	return out
}

// close drops what is queued and makes later pushes no-ops.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.events = nil
	q.mu.Unlock()
}
