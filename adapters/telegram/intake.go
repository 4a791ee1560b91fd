package telegram

import (
	"context"
	"encoding/json"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/journal"
	"github.com/golem-chat/golem/internal/relay"
)

// pendingKey is where, in Options.State, the updates taken from Telegram
// but not yet handed to the handler are kept.
const pendingKey = "telegram.pending"

// lane is the order a message keeps: the messages of one chat reach the
// handler in the order they were sent, except that a command that acts on
// what is running now (core.Overtakes: /stop) has a lane of its own and so
// overtakes messages of its chat whose attachments are still downloading.
type lane struct {
	chat   string
	urgent bool
}

// taken is a message ready for the handler and the update it came in.
type taken struct {
	update int64
	m      core.Message
}

// intake hands the messages of the updates the poll loop takes to the
// handler without holding the loop: a message with attachments downloads
// them on a goroutine of its own, and a chat's later messages wait for it
// while other chats go on.
//
// The poll loop confirms an update to Telegram (the next getUpdates asks
// for the updates after it) as soon as it has taken it, whether or not its
// download is done; Telegram then forgets it. So every update that is
// confirmed before it reaches the handler is first written to a journal in
// Options.State, and struck from it once Handle has returned for it. If
// golem is killed meanwhile (a download in progress), the next start hands
// the journal's updates on again, downloading their files anew; the ones
// that had reached Handle just before the kill are dropped there as
// duplicates, since Handle records each event id before it returns. No
// update is lost and none is handed on twice (see internal/journal, also
// for its bound).
type intake struct {
	a     *Adapter
	ctx   context.Context
	h     core.Handler
	chats *relay.Relay[lane, taken]
	j     *journal.Journal // the updates confirmed but not yet handed on
}

func (a *Adapter) newIntake(ctx context.Context, h core.Handler) *intake {
	in := &intake{a: a, ctx: ctx, h: h, j: journal.New(journal.Options{
		Store: a.opts.State, Key: pendingKey, ID: updateID, Logger: a.log,
	})}
	in.chats = relay.New(in.deliver)
	return in
}

// updateID is the journal's id of an update: its update_id.
func updateID(raw json.RawMessage) string {
	var head struct {
		UpdateID *int64 `json:"update_id"`
	}
	if json.Unmarshal(raw, &head) != nil || head.UpdateID == nil {
		return ""
	}
	return strconv.FormatInt(*head.UpdateID, 10)
}

// replay takes the journal's updates again, oldest first, before polling
// starts. Updates from offset on are dropped from it instead: they were
// never confirmed, so Telegram sends them again.
func (in *intake) replay(offset int64) {
	in.j.Replay(func(raw json.RawMessage) bool {
		id, _ := strconv.ParseInt(updateID(raw), 10, 64)
		if offset != 0 && id >= offset {
			return false
		}
		in.a.log.Info("telegram: handing on an update taken before the restart", "update_id", id)
		return in.take(id, raw)
	})
}

// take hands on the message of one update, if it is one for the bot, and
// reports whether the update was journaled (save it before confirming it).
// A group message not for the bot is kept for the chat context instead,
// and a message for it notes what it replied to (see History).
// A message with no attachment and nothing before it in its lane goes to
// the handler at once, on the poll loop, since Handle does not block.
// Called from the poll loop only.
func (in *intake) take(id int64, raw json.RawMessage) bool {
	var u tgbotapi.Update
	var x extra
	if err := json.Unmarshal(raw, &u); err != nil {
		in.a.log.Error("telegram: an update that cannot be decoded dropped", "update_id", id, "err", err)
		in.done(id)
		return false
	}
	_ = json.Unmarshal(raw, &x)
	if u.CallbackQuery != nil { // a click: decided at once, answered off the poll loop
		go in.a.onCallback(in.ctx, in.h, u.CallbackQuery)
		in.done(id)
		return false
	}
	m, files, ok := in.a.normalize(u, x)
	if !ok {
		in.a.overhear(u, x) // only messages for the bot start turns
		in.done(id)
		return false
	}
	in.a.noteReply(m, u.Message, x)
	l := lane{chat: m.Channel, urgent: core.Overtakes(m.Text)}
	if len(files) > 0 && !core.Admitted(in.h, m) {
		files = nil // a stranger's files are not fetched: the message is refused
	}
	if len(files) == 0 && in.chats.Idle(l) {
		in.h.Handle(in.ctx, m)
		in.done(id)
		return false
	}
	kept := in.j.Keep(strconv.FormatInt(id, 10), raw)
	in.chats.Add(l, func() (taken, bool) {
		in.a.attach(in.ctx, &m, files)
		// Stopped meanwhile: the download was cut short, so leave the
		// update in the journal for the next start.
		return taken{update: id, m: m}, in.ctx.Err() == nil
	})
	return kept
}

// deliver hands a prepared message to the handler in its lane's order.
func (in *intake) deliver(_ lane, t taken) {
	if in.ctx.Err() != nil {
		return // kept in the journal for the next start
	}
	in.h.Handle(in.ctx, t.m)
	in.done(t.update)
}

// done strikes an update from the journal once it needs no handing on.
func (in *intake) done(id int64) { in.j.Done(strconv.FormatInt(id, 10)) }

// save writes the journal if it changed.
func (in *intake) save() { in.j.Save() }

// close waits until every message being prepared has been handed on, or
// dropped because ctx ended (those stay in the journal).
func (in *intake) close() { in.chats.Close() }
