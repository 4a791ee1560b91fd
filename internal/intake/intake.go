// Package intake is how a platform adapter hands the messages it takes to
// core: in their place's order, without holding the platform's receive
// loop, and without losing one that was confirmed to the platform before
// it reached core.
//
// A message with nothing to prepare and nothing before it in its lane goes
// to the handler at once, on the receive loop (core's Handle does not
// block), and the platform is told once Handle has returned. Any other — its files are downloading, or one before it in its
// lane is — is journaled (internal/journal) before the platform is told it
// was received (Slack's ack, Telegram's offset, Discord's sequence), then
// prepared on a goroutine of its own and handed on in its lane's order,
// and struck from the journal once Handle has returned. After a kill the
// next start hands the journal's messages on again (Replay); core's dedupe
// of event ids drops the ones that had reached it just before.
package intake

import (
	"context"
	"encoding/json"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/journal"
	"github.com/golem-chat/golem/internal/relay"
)

// Lane is the order a message keeps: the messages of one place (a channel,
// a chat) reach the handler in the order they came, so that "see the file"
// followed by "and fix it" reaches the agent in that order, except that a
// command acting on what is running now (core.Overtakes: /stop) has a lane
// of its own and so overtakes messages whose files are still downloading.
type Lane struct {
	Place  string
	Urgent bool
}

// LaneOf is m's lane: its channel's, or its channel's urgent one.
func LaneOf(m core.Message) Lane { return Lane{Place: m.Channel, Urgent: core.Overtakes(m.Text)} }

// Intake hands one adapter's messages to its handler. Take is called from
// the adapter's receive loop only, in the order messages arrive.
type Intake struct {
	j       *journal.Journal
	lanes   *relay.Relay[Lane, taken]
	running func() (core.Handler, context.Context)
}

// taken is a prepared message and its journal id.
type taken struct {
	m  core.Message
	id string
}

// New returns an intake over j. running tells the handler and its
// context, or a nil handler once the adapter has stopped: a message
// prepared then stays in the journal for the next start.
func New(j *journal.Journal, running func() (core.Handler, context.Context)) *Intake {
	in := &Intake{j: j, running: running}
	in.lanes = relay.New(in.deliver)
	return in
}

// Take hands m on and reports whether it was journaled under id. prepare,
// when not nil, readies m before it is handed on (downloads its files);
// it returns false when the adapter stopped meanwhile (a download cut
// short), and the message then stays in the journal. A message that needs
// prepare or waits behind its lane is journaled as raw, and the journal
// saved when save is set (a platform told at once; Telegram's poll loop
// saves the journal itself with its offset), before confirm is called.
// confirm, when not nil, tells the platform the message was received; it
// is called in every case.
func (in *Intake) Take(m core.Message, id string, raw json.RawMessage, save bool, confirm func(), prepare func(*core.Message) bool) (kept bool) {
	if confirm == nil {
		confirm = func() {}
	}
	h, ctx := in.running()
	l := LaneOf(m)
	if h != nil && prepare == nil && in.lanes.Idle(l) {
		// Handle has made m durable when it returns (its event id seen; with
		// replicas, m in its conversation's mailbox), so only then is the
		// platform told: a kill in between and the platform sends it again.
		h.Handle(ctx, m)
		confirm()
		in.j.Done(id) // a replayed one
		return false
	}
	if raw != nil && id != "" {
		kept = in.j.Keep(id, raw)
		if save {
			in.j.Save()
		}
	}
	confirm()
	if h == nil { // stopped: it stays in the journal for the next start
		return kept
	}
	in.lanes.Add(l, func() (taken, bool) {
		if prepare != nil && !prepare(&m) {
			return taken{}, false
		}
		return taken{m: m, id: id}, true
	})
	return kept
}

// Waits reports whether m would wait behind its lane: a message before it
// there is still being prepared or handed on. A source whose messages
// always need preparing (Discord's slash commands, deferred first) asks it
// to journal only those that wait. Called from the receive loop, like
// Take: a lane it finds idle stays idle until the next Take.
func (in *Intake) Waits(m core.Message) bool { return !in.lanes.Idle(LaneOf(m)) }

// deliver hands a prepared message to the handler in its lane's order and
// strikes it from the journal, unless the adapter has stopped meanwhile.
func (in *Intake) deliver(_ Lane, t taken) {
	h, ctx := in.running()
	if h == nil || ctx.Err() != nil {
		return // kept in the journal for the next start
	}
	h.Handle(ctx, t.m)
	in.j.Done(t.id)
}

// Close waits until every message being prepared has been handed on, or
// left in the journal because the adapter stopped.
func (in *Intake) Close() { in.lanes.Close() }
