package core

import (
	"sync"

	"github.com/golem-chat/golem/parser"
)

// EventQueue carries events from a message's Sink to the goroutine that
// shows them (an HTTP event stream, the terminal). Push never blocks: the
// queue grows while the reader is busy and drops everything once closed
// (the client went away, the answer is over), so a slow or gone reader can
// never stall the dispatcher. Safe for pushers (a turn, and whoever
// decides one of its permission requests) and one taker running
// concurrently.
type EventQueue struct {
	mu     sync.Mutex
	events []parser.Event
	spare  []parser.Event // what Take returned last: events' next buffer
	closed bool
	ready  chan struct{} // capacity 1: a push happened since the last take
}

// NewEventQueue returns an empty, open queue.
func NewEventQueue() *EventQueue {
	return &EventQueue{ready: make(chan struct{}, 1)}
}

// Push appends es unless the queue is closed, with one wake-up of the
// taker for all of them. Use it as Message.Sink.
func (q *EventQueue) Push(es ...parser.Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.events = append(q.events, es...)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Ready receives after a Push since the last Take.
func (q *EventQueue) Ready() <-chan struct{} { return q.ready }

// Take returns the queued events, oldest first, and empties the queue.
// The slice is the taker's until it calls Take again, which reuses its
// memory for later events, so that a stream's batches do not each
// allocate.
func (q *EventQueue) Take() []parser.Event {
	q.mu.Lock()
	out := q.events
	clear(q.spare) // the taker is done with it
	q.events, q.spare = q.spare[:0], out
	q.mu.Unlock()
	return out
}

// Close drops what is queued and makes later pushes no-ops.
func (q *EventQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.events, q.spare = nil, nil
	q.mu.Unlock()
}
