package engine

import (
	"context"
	"sync"
	"time"

	"github.com/golem-chat/golem/parser"
)

// coalesce is how long a run holds events that follow closely on the last
// ones it handed over, so that a CLI printing a line every half
// millisecond wakes its consumer a few hundred times a second rather than
// thousands; while the output streams steadily its reader (output) reads
// once per steadyWindows of it. The first events after a quiet spell and
// a terminal event that has been read are never held.
const coalesce = 4 * time.Millisecond

// steadyWindows is how many coalescing windows one window of a steady
// spell lasts (see output), and how many lines it must bring for the
// spell to go on: a stream of at least one line per coalescing window is
// read every 20 ms, a slower one as its lines come.
const steadyWindows = 5

// Run is one agent invocation in progress. It is two-way: a run of a CLI
// that asks before it writes or runs (Capabilities.Approvals) delivers
// parser.PermissionRequest events and waits for the answers given to
// Respond (see permission.go); the run never waits for its consumer to
// read.
//
// The events are read with Next, which returns every event ready at once,
// or, one at a time, from the channel Events returns; a consumer uses one
// of the two. The terminal event comes as soon as the CLI's result line is
// parsed; Exited says when the CLI's process is gone too.
type Run struct {
	mu      sync.Mutex
	pending []parser.Event
	spare   []parser.Event // the batch Next returned last, the caller's until the next Next
	ended   bool           // the terminal event is pending or taken
	taken   bool           // and has been taken
	ready   chan struct{}  // capacity 1: something to take since the last Next
	hold    time.Duration  // see coalesce; 0 for in-process runs
	woke    time.Time      // when the consumer was last woken
	timer   *time.Timer    // a held wake-up, or nil

	exited  chan struct{}
	ctx     context.Context // the run's; Events drops what is unread once it is done
	once    sync.Once
	events  chan parser.Event
	answers chan PermissionAnswer // in-process runs: what Respond is given
	control *control              // a CLI run that asks: its stdin
}

// firstBatch is room for the events of a batch, which a short answer's
// fit in: one allocation rather than one per doubling.
const firstBatch = 8

// maxPooled is the largest batch put back in batches: a rare huge one is
// left to the collector rather than kept.
const maxPooled = 256

// batches holds the event batches of the runs that are not using one: a
// run takes one when its CLI prints something and gives it back once its
// consumer is done with it and waits (see Next), so that a run waiting
// for its agent (a long tool, a permission answer) holds none, and a
// steady stream still allocates no batch per read.
var batches = sync.Pool{New: func() any {
	b := make([]parser.Event, 0, firstBatch)
	return &b
}}

func takeBatch() []parser.Event { return (*batches.Get().(*[]parser.Event))[:0] }

func giveBatch(b []parser.Event) {
	if cap(b) == 0 || cap(b) > maxPooled {
		return
	}
	clear(b[:cap(b)])
	b = b[:0]
	batches.Put(&b)
}

func newRun(ctx context.Context, hold time.Duration) *Run {
	return &Run{ready: make(chan struct{}, 1), hold: hold,
		exited: make(chan struct{}), ctx: ctx, answers: make(chan PermissionAnswer)}
}

// Next waits until events are ready and returns all of them, oldest first.
// The batch that holds the terminal event (parser.Done or parser.Error)
// ends with it, and after it Next returns nil at once. The run never waits
// for Next: what the CLI prints waits in memory until it is taken.
//
// The batch is the caller's (to filter in place, say) until it calls Next
// again, which reuses its memory for a later batch, so that a run's
// batches do not each allocate.
func (r *Run) Next() []parser.Event {
	for {
		r.mu.Lock()
		giveBatch(r.spare) // the caller is done with it
		r.spare = nil
		if len(r.pending) > 0 {
			out := r.pending
			r.pending, r.spare = nil, out
			r.taken = r.ended
			r.mu.Unlock()
			return out
		}
		if r.taken {
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock()
		<-r.ready
	}
}

// Events delivers the run's events one at a time, in order, for callers
// that want a channel. The terminal event comes as early as from Next; the
// channel is closed after it once the run has exited (see Exited), so a
// loop over it ends when the CLI is gone and its files are written. Once
// the run's ctx is cancelled, events the caller has not read yet may be
// dropped to make room for the terminal event, which is always delivered;
// a caller that stops reading after cancelling leaks nothing.
func (r *Run) Events() <-chan parser.Event {
	r.once.Do(func() {
		r.events = make(chan parser.Event, 64)
		go r.forward()
	})
	return r.events
}

// forward feeds Events from Next.
func (r *Run) forward() {
	defer func() {
		<-r.exited
		close(r.events)
	}()
	done := r.ctx.Done()
	for batch := r.Next(); batch != nil; batch = r.Next() {
		for _, ev := range batch {
			if !ev.Terminal() {
				select {
				case r.events <- ev:
				case <-done: // not read any more: drop
				}
				continue
			}
			for { // the terminal event: make room for it
				select {
				case r.events <- ev:
					return
				case <-done:
					select {
					case <-r.events:
					default:
					}
				}
			}
		}
	}
}

// Exited is closed once every CLI process of the run has exited and its
// output is closed, after the terminal event. A caller that must not start
// the conversation's next turn before the agent is gone (the session file
// is written last) waits for it.
func (r *Run) Exited() <-chan struct{} { return r.exited }

// push queues events for the consumer; they are handed over at the next
// flush. Events after the terminal one are dropped.
func (r *Run) push(evs ...parser.Event) {
	r.mu.Lock()
	for _, ev := range evs {
		if r.ended {
			break
		}
		if r.pending == nil {
			r.pending = takeBatch()
		}
		r.pending = append(r.pending, ev)
		r.ended = ev.Terminal()
	}
	r.mu.Unlock()
}

// flush hands what push queued to the consumer: at once after a quiet
// spell of r.hold or when the terminal event is queued, otherwise when the
// hold since the last wake-up is over.
func (r *Run) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.dueLocked(time.Now()) && r.timer == nil {
		r.timer = time.AfterFunc(r.hold-time.Since(r.woke), func() {
			r.mu.Lock()
			r.timer = nil
			if len(r.pending) > 0 {
				r.wakeLocked(time.Now())
			}
			r.mu.Unlock()
		})
	}
}

// offer is flush for a CLI's output reader, which hands over what is held
// itself when the window is over (see heldUntil and handOver): no timer.
func (r *Run) offer() {
	r.mu.Lock()
	r.dueLocked(time.Now())
	r.mu.Unlock()
}

// dueLocked hands the pending events over if they are due (see flush)
// and reports whether nothing is left held.
func (r *Run) dueLocked(now time.Time) bool {
	if len(r.pending) == 0 {
		return true
	}
	if !r.ended && now.Sub(r.woke) < r.hold {
		return false
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.wakeLocked(now)
	return true
}

// heldUntil reports whether events are held and when their window ends.
func (r *Run) heldUntil() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.woke.Add(r.hold), len(r.pending) > 0 && !r.ended
}

// handOver hands over what is pending now, its window being over.
func (r *Run) handOver() {
	r.mu.Lock()
	if len(r.pending) > 0 {
		r.wakeLocked(time.Now())
	}
	r.mu.Unlock()
}

// sleepSteady waits until the steady window (steadyWindows coalescing
// windows) that began with the last hand-over is over.
func (r *Run) sleepSteady() {
	r.mu.Lock()
	d := steadyWindows*r.hold - time.Since(r.woke)
	r.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
}

func (r *Run) wakeLocked(now time.Time) {
	r.woke = now
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// finish queues the terminal event unless one was delivered already, hands
// it over, and marks the run exited.
func (r *Run) finish(ev parser.Event) {
	r.push(ev)
	r.flush()
	close(r.exited)
}
