package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// Send posts markdown as a new message in to.Channel (in forum topic
// to.Thread when set; as a reply to to.ReplyTo in groups, so the answer is
// tied to the question). It waits for the chat's and the bot's budget: a
// new answer or notice first, a continuation (to.Continues) with final
// texts. A new answer or notice in a group marks where the bot last
// answered there (see History). Text that Telegram measures over 4,096
// units (the streamer splits before that; this is a guard) goes out as
// several messages; the last one's reference is returned.
func (a *Adapter) Send(ctx context.Context, to core.Place, markdown string) (core.MessageRef, error) {
	chat, err := parseID(to.Channel)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("telegram: send: channel %q: %w", to.Channel, err)
	}
	p := tgbotapi.Params{"chat_id": to.Channel, "disable_web_page_preview": "true"}
	if to.Thread != "" {
		p["message_thread_id"] = to.Thread
	}
	if to.ReplyTo != "" && chat < 0 {
		p["reply_to_message_id"] = to.ReplyTo
		p["allow_sending_without_reply"] = "true"
	}
	parts := chunks(markdown, 4096)
	if len(parts) > 1 {
		a.log.Warn("telegram: message over the length limit sent in parts", "parts", len(parts))
	}
	c := classNew
	if to.Continues {
		c = classMust
	}
	var ref core.MessageRef
	for i, r := range parts {
		if i > 0 {
			c = classMust
		}
		if ref, err = a.post(ctx, chat, post{method: "sendMessage", class: c, riskDuplicate: true}, p, fixed(r)); err != nil {
			return core.MessageRef{}, err
		}
		ref.Thread = to.Thread
	}
	if !to.Continues && chat < 0 {
		a.answeredIn(chat, to, ref)
	}
	return ref, nil
}

// answeredIn forgets the messages seen in the group before the one the
// bot just answered (to.ReplyTo; without one, before the answer itself):
// they were that turn's chat context, or older.
func (a *Adapter) answeredIn(chat int64, to core.Place, ref core.MessageRef) {
	thread, _ := strconv.ParseInt(to.Thread, 10, 64)
	mark, err := strconv.Atoi(to.ReplyTo)
	if err != nil || mark <= 0 {
		mark, _ = strconv.Atoi(ref.ID)
	}
	a.seen.answered(place{chat, thread}, mark)
}

// Edit replaces the text of msg; the streamer uses it for final texts,
// which wait for the budget with continuations and are never skipped.
// Telegram's "message is not modified" is success.
func (a *Adapter) Edit(ctx context.Context, msg core.MessageRef, markdown string) error {
	parts := chunks(markdown, 4096)
	if len(parts) > 1 {
		a.log.Warn("telegram: edit over the length limit cut to its first part", "parts", len(parts))
	}
	return a.edit(ctx, msg, fixed(parts[0]), classMust)
}

// EditLatest implements core.LatestEditor: an intermediate edit of a
// growing answer. It waits behind every other class of call, then sends
// the newest text latest gives, so an edit that waited under load carries
// what the agent has written by then.
func (a *Adapter) EditLatest(ctx context.Context, msg core.MessageRef, latest func() string) error {
	return a.edit(ctx, msg, func() rendered { return chunks(latest(), 4096)[0] }, classEdit)
}

func (a *Adapter) edit(ctx context.Context, msg core.MessageRef, text func() rendered, c class) error {
	chat, err := parseID(msg.Channel)
	if err != nil {
		return fmt.Errorf("telegram: edit: channel %q: %w", msg.Channel, err)
	}
	p := tgbotapi.Params{"chat_id": msg.Channel, "message_id": msg.ID, "disable_web_page_preview": "true"}
	_, err = a.post(ctx, chat, post{method: "editMessageText", class: c}, p, text)
	if isNotModified(err) {
		return nil
	}
	return err
}

// SendActivity posts tool activity as a reply to the answer message; it
// waits for the budget with continuations.
func (a *Adapter) SendActivity(ctx context.Context, answer core.MessageRef, markdown string) error {
	chat, err := parseID(answer.Channel)
	if err != nil {
		return fmt.Errorf("telegram: send activity: channel %q: %w", answer.Channel, err)
	}
	p := tgbotapi.Params{
		"chat_id": answer.Channel, "reply_to_message_id": answer.ID,
		"allow_sending_without_reply": "true", "disable_web_page_preview": "true",
	}
	if answer.Thread != "" {
		p["message_thread_id"] = answer.Thread
	}
	for _, r := range chunks(markdown, 4096) {
		if _, err := a.post(ctx, chat, post{method: "sendMessage", class: classMust}, p, fixed(r)); err != nil {
			return err
		}
	}
	return nil
}

// fixed is a text that does not change while its call waits.
func fixed(r rendered) func() rendered { return func() rendered { return r } }

// post is one kind of message call: its method, its class in the budget,
// and whether a sendMessage that may have landed is repeated anyway.
type post struct {
	method string
	class  class
	// riskDuplicate repeats a sendMessage that failed late: for an answer
	// (never lost), not for tool activity (never twice); a bot cannot read
	// the chat to find out (see the retry package). Edits and drafts are
	// always repeated: they do no harm.
	riskDuplicate bool
}

// post sends text as HTML through k.method; if Telegram cannot parse the
// HTML, it sends the same text as plain text. Every attempt, a retry too,
// waits for a slot of chat's and a token of the bot's budget (see budget)
// and only then takes its text. "message is not modified" is returned for
// the caller to judge.
func (a *Adapter) post(ctx context.Context, chat int64, k post, base tgbotapi.Params, text func() rendered) (core.MessageRef, error) {
	p := make(tgbotapi.Params, len(base)+2)
	for key, v := range base {
		p[key] = v
	}
	plain := false
	fill := func() {
		r := text()
		if plain {
			p["text"] = r.Plain
			delete(p, "parse_mode")
			return
		}
		p["text"], p["parse_mode"] = r.HTML, "HTML"
	}
	call := a.inBudget(chat, k.method, k.class, fill)
	call.Idempotent = k.method != "sendMessage"
	call.RiskDuplicate = k.riskDuplicate
	res, err := a.doCall(ctx, call, p)
	if isParseError(err) {
		a.log.Warn("telegram: HTML rejected, sending plain text", "method", k.method, "err", err)
		plain = true
		res, err = a.doCall(ctx, call, p)
	}
	if err != nil {
		return core.MessageRef{}, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(res, &m); err != nil {
		// editMessageText of an inline message answers true; ours are not.
		return core.MessageRef{}, fmt.Errorf("telegram: %s: decode answer: %w", k.method, err)
	}
	return core.MessageRef{Channel: strconv.FormatInt(chat, 10), ID: strconv.Itoa(m.MessageID)}, nil
}

// budgetGranted is the debug record of each budget grant (chat, class,
// wait): where a call's time went.
const budgetGranted = "telegram: budget granted"

// inBudget is a call of method into chat whose every attempt first waits
// for the budget, then runs fill (nil: nothing) to complete its
// parameters. The slot ends when the attempt's answer is in; a 429 holds
// the chat for its retry_after.
func (a *Adapter) inBudget(chat int64, method string, c class, fill func()) retry.Call {
	return retry.Call{
		Method: method,
		Before: func(ctx context.Context) (func(), error) {
			t0 := time.Now()
			s, err := a.budget.take(ctx, chat, c)
			if err != nil {
				return nil, err
			}
			a.log.Debug(budgetGranted, "chat", chat, "class", c.String(), "wait", time.Since(t0))
			if fill != nil {
				fill()
			}
			return s.done, nil
		},
		RateLimited: func(wait time.Duration) { a.budget.hold(chat, wait) },
	}
}

// ErrNoDrafts is returned by Draft when drafts are off (Options.Drafts) or
// the chat is not a private chat.
var ErrNoDrafts = errors.New("telegram: drafts are off or not possible in this chat")

// Draft shows markdown as the live draft of the answer to to.ReplyTo in a
// private chat (sendMessageDraft): later calls for the same answer replace
// the draft, and the final text must still be posted with Send. A draft
// longer than Telegram's limit shows its first part. A draft waits for the
// chat's and the bot's budget like an intermediate edit: Telegram
// documents no budget of its own for drafts, and one that took nothing
// from the chat's would let the final Send after it land in the same
// second. It implements core.Drafter: the reply streamer drafts while an
// answer fits in one message, then posts the final text with Send.
func (a *Adapter) Draft(ctx context.Context, to core.Place, markdown string) error {
	if !a.CanDraft(to) {
		return ErrNoDrafts
	}
	chat, _ := parseID(to.Channel)
	draftID := to.ReplyTo
	if n, err := strconv.ParseInt(draftID, 10, 64); err != nil || n == 0 {
		draftID = "1"
	}
	r := chunks(markdown, 4096)[0]
	p := tgbotapi.Params{"chat_id": to.Channel, "draft_id": draftID, "text": r.HTML, "parse_mode": "HTML"}
	if to.Thread != "" {
		p["message_thread_id"] = to.Thread
	}
	call := a.inBudget(chat, "sendMessageDraft", classEdit, nil)
	call.Idempotent = true
	_, err := a.doCall(ctx, call, p)
	if isParseError(err) {
		p["text"] = r.Plain
		delete(p, "parse_mode")
		_, err = a.doCall(ctx, call, p)
	}
	return err
}

// CanDraft implements core.Drafter: drafts are on (Options.Drafts) and to
// is a private chat.
func (a *Adapter) CanDraft(to core.Place) bool {
	chat, err := parseID(to.Channel)
	return a.opts.Drafts && err == nil && chat > 0
}

// typingEvery repeats the typing action; Telegram shows it for about 5s.
const typingEvery = 4 * time.Second

// Typing shows "typing…" in the message's chat (and topic) until stop is
// called, repeating the action every 4 seconds. It is best effort: an
// action is skipped unless the bot's budget has room for it at once
// beyond what waiting and higher classes of call may need.
func (a *Adapter) Typing(ctx context.Context, on core.Message) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := tgbotapi.Params{"chat_id": on.Channel, "action": "typing"}
		if on.Thread != "" {
			p["message_thread_id"] = on.Thread
		}
		t := time.NewTicker(typingEvery)
		defer t.Stop()
		for {
			if a.budget.tryNow() {
				if api, err := a.connected(ctx); err == nil {
					if _, err := api.call(ctx, "sendChatAction", p); err != nil && ctx.Err() == nil {
						a.log.Debug("telegram: typing action failed", "err", err)
					}
				}
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

func parseID(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("not a Telegram chat id")
	}
	return n, nil
}
