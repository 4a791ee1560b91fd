package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// Busy is what a message does when its conversation's answer is still
// running: the busy key of bot.yaml. Commands (/stop, /status, /allow, ...)
// and approval clicks are never affected: they are answered at once.
type Busy string

const (
	// BusyDefault (the zero value) steers where the running turn's engine
	// can (Capabilities.Steering), and queues otherwise.
	BusyDefault Busy = ""
	// BusySteer sends the message into the running turn at once (a user
	// message on the agent's stdin, engine.Run.Steer) and acknowledges it
	// in the chat; an engine that cannot take it queues it, and says so
	// once per conversation.
	BusySteer Busy = "steer"
	// BusyInterrupt stops the running answer (its partial text kept,
	// marked stopped) and runs the new message at once, in the same
	// session.
	BusyInterrupt Busy = "interrupt"
	// BusyQueue queues the message behind the running turn.
	BusyQueue Busy = "queue"
)

// ParseBusy returns the Busy named s; "" is BusyDefault.
func ParseBusy(s string) (Busy, error) {
	switch b := Busy(s); b {
	case BusyDefault, BusySteer, BusyInterrupt, BusyQueue:
		return b, nil
	}
	return "", fmt.Errorf("%q is not steer, interrupt or queue", s)
}

// errSuperseded is the cause with which BusyInterrupt stops a turn.
var errSuperseded = errors.New("a newer message came in")

// supersededNote ends an answer that BusyInterrupt stopped.
const supersededNote = "⏹️ _Stopped for the newer message._"

// notice is the line that ends an answer that ended with ev in a turn of
// ctx: Notice's, except that one busy: interrupt stopped says so.
func (d *Dispatcher) notice(ctx context.Context, ev parser.Event) string {
	if ev.Reason == parser.Stopped && errors.Is(context.Cause(ctx), errSuperseded) {
		return supersededNote
	}
	return Notice(ev, d.opts.Timeout)
}

// steeredNote answers a message steered into the running answer where the
// platform cannot mark it otherwise (no Acknowledger, or a stream).
const steeredNote = "👀 _(noted: added to the answer in progress)_"

// queuedNote tells a conversation, once, that its engine cannot take a
// message while it answers.
const queuedNote = "⏳ _%s cannot take messages while it answers; this one runs when the answer is done._"

// steering is a running turn that takes messages (BusySteer on an engine
// that can): Handle hands them to inbox, and one goroutine of the turn
// (steerLoop, started with the first message: most turns get none) writes
// them to the run in order. Guarded by its conversation's mu except run,
// user, userName, dir and log, which are set once, and wake, set once with
// done.
type steering struct {
	run      *engine.Run
	user     string // whose message the turn answers
	userName string
	dir      string // the turn's working directory, for attachments
	log      *slog.Logger
	inbox    []Message
	written  []Message // the messages Steer took, in order (see notTaken)
	steered  int       // messages taken into the turn, for /status
	stops    int       // how often /stop dropped inbox (see steerLoop)
	ending   bool      // the turn is over: steerLoop empties inbox and ends
	wake     chan struct{}
	done     chan struct{} // closed when steerLoop has ended; nil until it starts
}

func (s *steering) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// busy decides what Handle does with m while c is busy, with c.mu held:
// taken is true when m was handed to the running turn (BusySteer), and
// tellQueued when m queues because the turn's engine cannot steer and the
// conversation has not been told so yet. BusyInterrupt stops the running
// turn unless the queue is full (see waitLimit); m then queues and runs
// next.
func (d *Dispatcher) busy(c *conversation, m Message) (taken, tellQueued bool) {
	r := c.running
	if r == nil {
		return false, false
	}
	switch d.opts.Busy {
	case BusyQueue:
		return false, false
	case BusyInterrupt:
		if r.interrupt != nil && len(c.queue) < d.waitLimit() { // full: refused, the answer goes on
			// Off the receive path: a message past its budget (refused
			// when its turn comes) stops nothing.
			d.workers.Add(1) // a turn runs: the count is above zero
			go func(interrupt func(), eng string) {
				defer d.workers.Done()
				if d.overBudget(m) == "" {
					interrupt()
					d.meter.BusyMessage(m.Platform, eng, "interrupted")
				}
			}(r.interrupt, r.engine)
		}
		return false, false
	}
	if r.engine != "" && !steerable(r.engine) {
		if c.toldNoSteer {
			return false, false
		}
		c.toldNoSteer = true
		return false, true
	}
	s := r.steer
	if s == nil || s.ending || len(c.queue) > 0 || len(s.inbox) >= max(d.opts.QueueDepth, 1) {
		return false, false // not started yet, ending, or behind waiting messages: queue
	}
	s.inbox = append(s.inbox, m)
	if s.done == nil {
		s.wake, s.done = make(chan struct{}, 1), make(chan struct{})
		go d.steerLoop(c, s, s.log)
	}
	s.poke()
	return true, false
}

// waitLimit is how many messages may wait in a conversation's queue:
// QueueDepth, none when it is negative; with BusyInterrupt at least one,
// the newer message, which waits only for the answer it stopped to end.
func (d *Dispatcher) waitLimit() int {
	if d.opts.Busy == BusyInterrupt {
		return max(d.opts.QueueDepth, 1)
	}
	return max(d.opts.QueueDepth, 0)
}

// steerable reports whether the engine named name takes messages while a
// turn runs.
func steerable(name string) bool {
	spec, ok := engine.Find(name)
	return ok && spec.Capabilities.Steering
}

// startSteering makes the running turn of c take messages while it runs,
// when the busy mode and the engine allow it; the returned func ends that
// and waits until every message handed to the turn was written to the run
// or put back, in order, at the head of c's queue for a turn of its own. It
// returns the messages written to the run, in order.
func (d *Dispatcher) startSteering(c *conversation, run *engine.Run, eng string, m Message, dir string, log *slog.Logger) (end func() []Message) {
	if (d.opts.Busy != BusyDefault && d.opts.Busy != BusySteer) || !steerable(eng) || m.prompt != nil {
		// A scheduled prompt's turn (in a session of its own, as often as
		// not) takes no person's message: those queue behind it.
		return func() []Message { return nil }
	}
	s := &steering{run: run, user: m.User, userName: m.UserName, dir: dir, log: log}
	c.mu.Lock()
	if c.running != nil {
		c.running.steer = s
	}
	c.mu.Unlock()
	return func() []Message {
		c.mu.Lock()
		s.ending = true // no steerLoop starts after this
		if c.running != nil && c.running.steer == s {
			c.running.steer = nil
		}
		done := s.done
		c.mu.Unlock()
		if done != nil {
			s.poke()
			<-done
		}
		return s.written // steerLoop has ended: no more writes
	}
}

// steerLoop writes the messages handed to s to its run, one at a time, and
// acknowledges each in the chat. A message the run can no longer take
// (engine.ErrNotSteerable: its last result came, it was stopped) goes back
// to the head of the conversation's queue with those after it: nothing
// handed to a turn is lost. One that /stop came for while it was being
// steered is dropped, as the messages waiting then are.
func (d *Dispatcher) steerLoop(c *conversation, s *steering, log *slog.Logger) {
	defer close(s.done)
	for {
		c.mu.Lock()
		if len(s.inbox) == 0 {
			ending := s.ending
			c.mu.Unlock()
			if ending {
				return
			}
			<-s.wake
			continue
		}
		m := s.inbox[0]
		s.inbox = s.inbox[1:]
		stops := s.stops
		c.mu.Unlock()

		if refusal := d.overBudget(m); refusal != "" { // read here, off the receive path
			d.answer(m, refusal, true)
			d.taken(c.key, m)
			continue
		}
		text, files := s.message(&m, log)
		if err := s.run.Steer(text, files); err != nil {
			log.Debug("message not steered; queued for a turn of its own", "err", err)
			c.mu.Lock()
			back := append([]Message{m}, s.inbox...)
			stopped := s.stops != stops // /stop came meanwhile: m was waiting too
			if stopped {
				back = back[1:]
			}
			s.inbox = nil
			if c.running != nil && c.running.steer == s {
				c.running.steer = nil
			}
			c.mu.Unlock()
			if stopped {
				d.dropStopped(m)
			}
			d.putBack(c, back)
			continue
		}
		c.mu.Lock()
		s.written = append(s.written, m)
		s.steered++
		eng := c.engine()
		c.mu.Unlock()
		d.meter.BusyMessage(m.Platform, eng, "steered")
		log.Info("message steered into the running turn", "files", len(files))
		d.acknowledge(m, log)
	}
}

// putBack puts msgs, messages handed to a running turn that its agent
// never read, back at the head of c's queue for turns of their own, in
// order. The queue keeps its bound (at least one: the turn is ending): the
// newest messages past it are told plainly that they were not delivered.
// While golem shuts down they end as the queued ones do.
func (d *Dispatcher) putBack(c *conversation, msgs []Message) {
	if len(msgs) == 0 {
		return
	}
	c.mu.Lock()
	closing := d.closing.Load() // Close, once closing, empties c.queue under c.mu
	var over []Message
	if !closing {
		c.queue = append(slices.Clone(msgs), c.queue...)
		if limit := max(d.waitLimit(), 1); len(c.queue) > limit {
			over = slices.Clone(c.queue[limit:])
			c.queue = c.queue[:limit]
		}
	}
	c.mu.Unlock()
	if closing { // as Close does with the queued ones
		for _, m := range msgs {
			d.measure(m, d.engineFor(m), shutdownEnd, nil, time.Time{})
			d.finishUnstarted(d.life, m, shutdownEnd)
		}
		return
	}
	for _, m := range over {
		d.answer(m, notDeliveredFull, true) // a stream gets it as its terminal event
		d.taken(c.key, m)
	}
}

// What a message handed to an answer is told when the agent never read it
// and it does not get a turn of its own.
const (
	notDeliveredStopped = "⏹️ _Not delivered: the answer was stopped before the agent read this message. Send it again to run it._"
	notDeliveredFull    = "⏳ _Not run: too many messages are waiting in this conversation. Send it again in a moment._"
)

// notTaken deals with msgs, the last messages steered into a turn of c
// that its agent had not read when its run ended with terminal: stopped
// by /stop, they are told so; otherwise (a timeout, a crash, busy:
// interrupt) each gets a turn of its own (putBack). Never silence: each
// was acknowledged in the chat as added to the answer. A turn stopped
// because the replica left the cluster leaves them in their mailbox, for
// the conversation's next owner.
func (d *Dispatcher) notTaken(ctx context.Context, c *conversation, msgs []Message, terminal parser.Event) {
	c.mu.Lock()
	givenUp := c.running != nil && c.running.givenUp
	c.mu.Unlock()
	if givenUp { // the replica left the cluster: they wait in their mailbox for the next owner
		d.log.Warn("replica lost its membership: steered messages the agent had not read left to the next owner",
			"conversation", c.key, "messages", len(msgs))
		return
	}
	if terminal.Type == parser.Error && terminal.Reason == parser.Stopped && !errors.Is(context.Cause(ctx), errSuperseded) && !d.closing.Load() {
		for _, m := range msgs {
			if m.Sink != nil { // told "noted", its stream has ended: counted, nothing more to send
				d.measure(m, d.engineFor(m), parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}, nil, time.Time{})
				d.taken(c.key, m)
				continue
			}
			d.dropStopped(m)
			d.answer(m, notDeliveredStopped, true)
		}
		return
	}
	var own []Message
	for _, m := range msgs {
		if m.Sink != nil { // told "noted", its stream has ended: nowhere to answer
			d.log.Warn("a message steered in from a stream was not read by the agent before the answer ended",
				"platform", m.Platform, "conversation", c.key.String())
			d.taken(c.key, m)
			continue
		}
		own = append(own, m)
	}
	d.putBack(c, own)
}

// message is what the agent is told of m: its text, from its author when
// the turn answers someone else (a shared channel), and its files moved
// into the turn's working directory; m's attachments are left where they
// now are, for a turn of its own should the run not take it.
func (s *steering) message(m *Message, log *slog.Logger) (string, []string) {
	text := m.Text
	if text == "" {
		text = "Look at the attached files."
	}
	if m.User != s.user {
		name := m.UserName
		if name == "" {
			name = m.User
		}
		text = "(from " + name + ") " + text
	}
	m.Attachments = moveInto(s.dir, m.Attachments, log)
	var files []string
	for _, a := range m.Attachments {
		files = append(files, a.Path)
	}
	return text, files
}

// acknowledge shows in the chat that m went into the running answer: the
// Poster's Acknowledger (a 👀 reaction) where it has one and it works,
// else the short steeredNote; a stream (Sink) gets steeredNote and done,
// the answer itself coming on the running turn's stream.
func (d *Dispatcher) acknowledge(m Message, log *slog.Logger) {
	if m.Sink == nil {
		if a, ok := d.poster(m.Platform).(Acknowledger); ok {
			err := a.Acknowledge(d.life, m)
			if err == nil {
				return
			}
			log.Debug("acknowledge a steered message; noting it instead", "err", err)
		}
	}
	d.answer(m, steeredNote, false)
}

// turnContext returns the context of one turn of a conversation, with its
// stop (/stop, a shutdown) and its interrupt (BusyInterrupt: a newer
// message came in, the cause errSuperseded). Either ends the turn
// "stopped", its partial answer kept.
func turnContext(parent context.Context) (ctx context.Context, stop, interrupt func()) {
	ctx, cancel := context.WithCancelCause(parent)
	return ctx, func() { cancel(nil) }, func() { cancel(errSuperseded) }
}
