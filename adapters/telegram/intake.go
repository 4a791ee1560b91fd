package telegram

import (
	"context"
	"encoding/json"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/intake"
	"github.com/golem-chat/golem/internal/journal"
)

// pendingKey is where, in Options.State, the updates taken from Telegram
// but not yet handed to the handler are kept.
const pendingKey = "telegram.pending"

// updates hands the messages of the updates the poll loop takes to the
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
type updates struct {
	a     *Adapter
	ctx   context.Context
	h     core.Handler
	j     *journal.Journal // the updates confirmed but not yet handed on
	chats *intake.Intake   // hands them on in their chat's order
}

func (a *Adapter) newUpdates(ctx context.Context, h core.Handler) *updates {
	in := &updates{a: a, ctx: ctx, h: h, j: journal.New(journal.Options{
		Store: a.opts.State, Key: pendingKey, ID: updateID, Logger: a.log,
	})}
	in.chats = intake.New(in.j, func() (core.Handler, context.Context) { return h, ctx })
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
func (in *updates) replay(offset int64) {
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
func (in *updates) take(id int64, raw json.RawMessage) bool {
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
	if len(files) > 0 && !core.Admitted(in.h, m) {
		files = nil // a stranger's files are not fetched: the message is refused
	}
	var prepare func(*core.Message) bool
	if len(files) > 0 {
		prepare = func(m *core.Message) bool {
			in.a.attach(in.ctx, m, files)
			return in.ctx.Err() == nil // cut short: the update stays in the journal
		}
	}
	// The poll loop saves the journal with the offset, which is what
	// confirms the update to Telegram.
	return in.chats.Take(m, strconv.FormatInt(id, 10), raw, false, nil, prepare)
}

// done strikes an update from the journal once it needs no handing on.
func (in *updates) done(id int64) { in.j.Done(strconv.FormatInt(id, 10)) }

// save writes the journal if it changed.
func (in *updates) save() { in.j.Save() }

// close waits until every message being prepared has been handed on, or
// dropped because ctx ended (those stay in the journal).
func (in *updates) close() { in.chats.Close() }
