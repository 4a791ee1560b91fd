package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/adapters/internal/retry"
	"github.com/golem-chat/golem/core"
)

// Send posts markdown as a new message in to.Channel (in forum topic
// to.Thread when set; as a reply to to.ReplyTo in groups, so the answer is
// tied to the question). It waits for the chat's and the global budget.
// Text that Telegram measures over 4,096 units (the streamer splits before
// that; this is a guard) goes out as several messages; the last one's
// reference is returned.
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
	var ref core.MessageRef
	for _, r := range parts {
		if ref, err = a.post(ctx, chat, "sendMessage", p, r, prioSend); err != nil {
			return core.MessageRef{}, err
		}
		ref.Thread = to.Thread
	}
	return ref, nil
}

// Edit replaces the text of msg. Telegram's "message is not modified" is
// success.
func (a *Adapter) Edit(ctx context.Context, msg core.MessageRef, markdown string) error {
	chat, err := parseID(msg.Channel)
	if err != nil {
		return fmt.Errorf("telegram: edit: channel %q: %w", msg.Channel, err)
	}
	parts := chunks(markdown, 4096)
	if len(parts) > 1 {
		a.log.Warn("telegram: edit over the length limit cut to its first part", "parts", len(parts))
	}
	p := tgbotapi.Params{"chat_id": msg.Channel, "message_id": msg.ID, "disable_web_page_preview": "true"}
	_, err = a.post(ctx, chat, "editMessageText", p, parts[0], prioEdit)
	if isNotModified(err) {
		return nil
	}
	return err
}

// SendActivity posts tool activity as a reply to the answer message.
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
		if _, err := a.post(ctx, chat, "sendMessage", p, r, prioActivity); err != nil {
			return err
		}
	}
	return nil
}

// post sends r as HTML through method, after waiting for the budget; if
// Telegram cannot parse the HTML, it sends the same text as plain text.
// "message is not modified" is returned for the caller to judge.
func (a *Adapter) post(ctx context.Context, chat int64, method string, base tgbotapi.Params, r rendered, prio int) (core.MessageRef, error) {
	p := make(tgbotapi.Params, len(base)+2)
	for k, v := range base {
		p[k] = v
	}
	p["text"], p["parse_mode"] = r.HTML, "HTML"
	// Every attempt, a retry too, waits for the budget. An edit may be
	// repeated freely; a new message that may have landed is repeated for
	// an answer (never lost) but not for tool activity (never twice): a
	// bot cannot read the chat to find out (see the retry package).
	call := retry.Call{Method: method, Idempotent: method != "sendMessage", RiskDuplicate: prio == prioSend,
		Before: func(ctx context.Context) (func(), error) { return nil, a.budgets.wait(ctx, chat, prio) }}
	res, err := a.doCall(ctx, call, p)
	if isParseError(err) {
		a.log.Warn("telegram: HTML rejected, sending plain text", "method", method, "err", err)
		p["text"] = r.Plain
		delete(p, "parse_mode")
		res, err = a.doCall(ctx, call, p)
	}
	if err != nil {
		return core.MessageRef{}, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(res, &m); err != nil {
		// editMessageText of an inline message answers true; ours are not.
		return core.MessageRef{}, fmt.Errorf("telegram: %s: decode answer: %w", method, err)
	}
	return core.MessageRef{Channel: strconv.FormatInt(chat, 10), ID: strconv.Itoa(m.MessageID)}, nil
}

// ErrNoDrafts is returned by Draft when drafts are off (Options.Drafts) or
// the chat is not a private chat.
var ErrNoDrafts = errors.New("telegram: drafts are off or not possible in this chat")

// Draft shows markdown as the live draft of the answer to to.ReplyTo in a
// private chat (sendMessageDraft): later calls for the same answer replace
// the draft, and the final text must still be posted with Send. A draft
// longer than Telegram's limit shows its first part. It waits for the
// global budget only (drafts are not chat messages). It implements
// core.Drafter: the reply streamer drafts while an answer fits in one
// message, then posts the final text with Send.
func (a *Adapter) Draft(ctx context.Context, to core.Place, markdown string) error {
	if !a.CanDraft(to) {
		return ErrNoDrafts
	}
	draftID := to.ReplyTo
	if n, err := strconv.ParseInt(draftID, 10, 64); err != nil || n == 0 {
		draftID = "1"
	}
	r := chunks(markdown, 4096)[0]
	p := tgbotapi.Params{"chat_id": to.Channel, "draft_id": draftID, "text": r.HTML, "parse_mode": "HTML"}
	if to.Thread != "" {
		p["message_thread_id"] = to.Thread
	}
	call := retry.Call{Method: "sendMessageDraft", Idempotent: true,
		Before: func(ctx context.Context) (func(), error) { return nil, a.budgets.global.wait(ctx, prioEdit) }}
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
// action is skipped when the global budget has no room for it at once.
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
			if a.budgets.global.tryNow() {
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
