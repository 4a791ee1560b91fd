package core

import (
	"context"
	"errors"
	"strings"

	"github.com/golem-chat/golem/store"
)

// Cluster shares conversations between golem replicas (package cluster
// implements it over etcd): each conversation runs on one replica at a
// time, its owner, and a message received by any replica is made durable
// in the conversation's mailbox and run by the owner. nil in Options: this
// golem is alone and runs every conversation itself.
//
// Everything that enters a conversation on this replica goes through the
// Cluster under the conversation's own lock (Admit's enqueue, the Host's
// Deliver), and Release checks idleness under that lock, so that the
// replica never lets go of a conversation with a message on its way in.
type Cluster interface {
	// Replica is this replica's name.
	Replica() string
	// Admit makes m durable in key's mailbox and has it run by key's
	// owner: here, by calling enqueue before Admit returns, when this
	// replica owns key or has just claimed it; otherwise the owner gets it
	// from the mailbox (Host.Deliver). A message with a Sink cannot move:
	// Admit waits, until ctx ends, for key to be free and claims it (a ctx
	// that has ended still claims a free key: it bounds the wait). An
	// error means m was not taken (the store is out of reach). When
	// Dedupe(m) names an event id, Admit marks it seen (as Store.MarkSeen
	// with SeenTTL) in the same round trip, and an id seen already is
	// ErrDuplicate, m put nowhere: a platform message costs one round
	// trip on its receive path. A Cluster that cannot returns false from
	// Dedupes, and core marks the id itself first.
	Admit(ctx context.Context, key store.Key, m Message, enqueue func(Message)) error
	// Dedupes reports whether Admit marks Dedupe(m) seen.
	Dedupes() bool
	// Taken strikes m from its mailbox: its turn began or it was answered.
	// With a store that strikes the mail as it records the turn
	// (store.MailStriker), a turn's own mail is struck there instead.
	Taken(key store.Key, m Message)
	// Release lets go of key when, under the key's lock, Host.Idle still
	// says it is idle and no mail waits for it; mail that came meanwhile is
	// delivered instead. It does not wait.
	Release(key store.Key)
	// Forward hands a click that no request here waits for to the other
	// replicas, and returns the answer of the one whose turn waits for it;
	// false when none answered in time. core also forwards the operator's
	// actions on a conversation another replica owns this way.
	Forward(ctx context.Context, a Action) (ActionResult, bool)
	// Owner names the replica that runs key now, "" when none does.
	Owner(key store.Key) string
	// Live reports whether this replica may start turns: it holds its
	// membership.
	Live() bool
}

// Host is what a Cluster calls back on this replica's Dispatcher.
type Host interface {
	// TakeOver is called when this replica has claimed key from a replica
	// that died: its turns left in flight are told they were interrupted,
	// before the answer of the mail that waited behind them. It does not
	// wait for the platforms: the notices go on a goroutine of their own,
	// which the conversation's next turn waits for.
	TakeOver(key store.Key)
	// Deliver runs m, a message from key's mailbox, now that this replica
	// owns its conversation.
	Deliver(m Message)
	// Idle reports whether nothing runs, exits or waits in key's
	// conversation here.
	Idle(key store.Key) bool
	// Act answers a click forwarded by another replica, when a request of
	// a turn here waits for it, or an operator's /stop or /new forwarded
	// to this replica, which owns the conversation (see operatorVerb).
	Act(ctx context.Context, a Action) (ActionResult, bool)
	// GiveUp is called when the replica lost its membership: every turn
	// here is stopped and every waiting message forgotten, quietly — the
	// replica that takes the conversations over runs them from their
	// mailboxes and tells the stopped turns they were interrupted.
	GiveUp()
}

var _ Host = (*Dispatcher)(nil)

// admit hands m, accepted by Handle, to its conversation: through the
// Cluster when there is one.
func (d *Dispatcher) admit(m Message) {
	c := d.opts.Cluster
	if c == nil {
		d.accept(m)
		return
	}
	d.carryHistory(&m)
	key := KeyFor(m, d.opts.Scope)
	ctx := d.life
	if m.Sink != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(d.life, d.opts.Timeout)
		defer cancel()
	}
	err := c.Admit(ctx, key, m, d.accept)
	if errors.Is(err, ErrDuplicate) {
		d.log.Debug("duplicate event dropped", "platform", m.Platform, "event", m.EventID)
		return
	}
	if err != nil {
		d.log.Error("message not taken: the store is out of reach", "platform", m.Platform, "conversation", key, "err", err)
		d.answer(m, "⚠️ golem could not save this message (its store is out of reach); send it again in a moment.", true)
	}
}

// taken tells the Cluster that m is done with its mailbox.
func (d *Dispatcher) taken(key store.Key, m Message) {
	if d.opts.Cluster != nil && m.mail != "" {
		d.opts.Cluster.Taken(key, m)
	}
}

// strikesAtRecord reports whether m's mail is to be struck in the write
// of its turn's first record: with a Cluster and a store that can
// (store.MailStriker), for an answer that is posted (a Sink's turn is
// recorded only once its agent runs). One write, so that a replica killed
// between the two leaves the mail, which the next owner runs, or the
// record, which it marks interrupted, and never neither.
func (d *Dispatcher) strikesAtRecord(m Message) bool {
	if d.opts.Cluster == nil || m.mail == "" || m.Sink != nil {
		return false
	}
	s, ok := d.opts.Store.(store.MailStriker)
	return ok && s.StrikesMail()
}

// takenLate strikes m's mail where its turn ends without the record that
// was to strike it.
func (d *Dispatcher) takenLate(key store.Key, m Message) {
	if m.strikeAtRecord {
		d.taken(key, m)
	}
}

// released lets go of key's conversation if nothing runs or waits in it
// here, with a Cluster.
func (d *Dispatcher) released(key store.Key) {
	cl := d.opts.Cluster
	if cl == nil {
		return
	}
	cl.Release(key)
}

// Idle implements Host.
func (d *Dispatcher) Idle(key store.Key) bool {
	c := d.find(key)
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle()
}

// SetMail marks m as the mailbox's message id, for a Cluster delivering it.
func SetMail(m Message, id string) Message {
	m.mail = id
	return m
}

// Mail is m's mailbox id ("" for none).
func Mail(m Message) string { return m.mail }

// Dedupe is the event id Cluster.Admit marks seen with m ("" for none).
func Dedupe(m Message) string { return m.dedupe }

// ErrDuplicate is Cluster.Admit's answer for an event seen already.
var ErrDuplicate = errors.New("core: a duplicate event")

// Deliver implements Host.
func (d *Dispatcher) Deliver(m Message) { d.accept(m) }

// TakeOver implements Host: it tells key's turns left in flight by a dead
// replica that they were interrupted.
func (d *Dispatcher) TakeOver(key store.Key) {
	// The Cluster holds key's lock, maybe on a platform's receive path:
	// the notices are posted off it, and the conversation's next turn
	// waits for them.
	done := make(chan struct{})
	d.mu.Lock()
	if d.closing.Load() { // the next owner tells them
		d.mu.Unlock()
		return
	}
	c := d.conversationLocked(key)
	c.mu.Lock()
	d.mu.Unlock()
	prev := c.notices
	c.notices = done
	c.mu.Unlock()
	d.workers.Add(1)
	go func() {
		defer d.workers.Done()
		if prev != nil {
			<-prev
		}
		d.tellInterrupted(key)
		c.mu.Lock()
		if c.notices == done {
			c.notices = nil
		}
		c.mu.Unlock()
		close(done)
		d.released(key)
	}()
}

// tellInterrupted edits the answers of key's turns that a dead replica
// left in flight to say they were interrupted.
func (d *Dispatcher) tellInterrupted(key store.Key) {
	turns, err := d.opts.Store.InFlightTurns()
	if err != nil {
		d.log.Error("read interrupted turns", "conversation", key, "err", err)
		return
	}
	for _, t := range turns {
		if t.Key != key {
			continue
		}
		if t.Stream {
			d.endTurn(t.ID)
			continue
		}
		p := d.poster(t.Platform)
		if p == nil {
			d.log.Warn("interrupted turn of a platform not served here", "platform", t.Platform, "conversation", key)
			d.endTurn(t.ID)
			continue
		}
		d.log.Info("took over a conversation whose replica died", "conversation", key, "replica", t.Replica)
		d.noticeInterrupted(p, t)
	}
}

// Act implements Host.
func (d *Dispatcher) Act(ctx context.Context, a Action) (ActionResult, bool) {
	verb, id, rest, ok := parseActionData(a.Data)
	if !ok {
		return ActionResult{}, false
	}
	if op, isOp := strings.CutPrefix(verb, operatorVerb); isOp {
		return d.actAsOperator(a, op, id, rest)
	}
	d.approvals.mu.Lock()
	_, here := d.approvals.pending[id]
	d.approvals.mu.Unlock()
	if !here {
		return ActionResult{}, false
	}
	return d.handleAction(ctx, a), true
}

// GiveUp implements Host.
func (d *Dispatcher) GiveUp() {
	for _, c := range d.conversations() {
		c.mu.Lock()
		dropped := len(c.queue)
		c.queue = nil
		if c.running != nil {
			c.running.givenUp = true
			c.running.stop()
		}
		c.mu.Unlock()
		if dropped > 0 {
			d.log.Warn("replica lost its membership: waiting messages left to the next owner", "conversation", c.key, "messages", dropped)
		}
	}
}
