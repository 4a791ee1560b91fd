package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
)

var _ core.Asker = (*Adapter)(nil)

// Ask implements core.Asker: the question as a reply to the answer (or at
// its place) with an inline keyboard, one button per row. A button's
// callback_data is the Choice's Data (at most 64 bytes); the request itself
// stays with golem.
func (a *Adapter) Ask(ctx context.Context, q core.Question) (core.MessageRef, error) {
	to := q.Place
	if q.Answer.ID != "" {
		to = core.Place{Channel: q.Answer.Channel, Thread: q.Answer.Thread, ReplyTo: q.Answer.ID}
	}
	chat, err := parseID(to.Channel)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("telegram: ask: channel %q: %w", to.Channel, err)
	}
	rows := make([][]map[string]string, 0, len(q.Choices))
	for _, c := range q.Choices {
		if len(c.Data) > 64 {
			return core.MessageRef{}, fmt.Errorf("telegram: ask: callback data %q is over 64 bytes", c.Data)
		}
		rows = append(rows, []map[string]string{{"text": c.Label, "callback_data": c.Data}})
	}
	markup, err := json.Marshal(map[string]any{"inline_keyboard": rows})
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("telegram: ask: keyboard: %w", err)
	}
	p := tgbotapi.Params{"chat_id": to.Channel, "disable_web_page_preview": "true", "reply_markup": string(markup)}
	if to.Thread != "" {
		p["message_thread_id"] = to.Thread
	}
	if to.ReplyTo != "" {
		p["reply_to_message_id"] = to.ReplyTo
		p["allow_sending_without_reply"] = "true"
	}
	ref, err := a.post(ctx, chat, post{method: "sendMessage", class: classMust}, p, fixed(chunks(q.Text, 4096)[0]))
	ref.Thread = to.Thread
	return ref, err
}

// Settle implements core.Asker: the question's text becomes text, and the
// keyboard goes (an edit without reply_markup removes it).
func (a *Adapter) Settle(ctx context.Context, question core.MessageRef, text string) error {
	return a.edit(ctx, question, fixed(chunks(text, 4096)[0]), classMust)
}

// onCallback takes a click on a question's button: the handler decides at
// once, answerCallbackQuery shows the clicker a toast (the refusal, or the
// outcome), and a deciding click edits the question to its outcome.
func (a *Adapter) onCallback(ctx context.Context, h core.Handler, cq *tgbotapi.CallbackQuery) {
	act := core.Action{EventID: "cb:" + cq.ID, Platform: "telegram", Data: cq.Data}
	if cq.From != nil {
		act.User, act.UserName = strconv.FormatInt(cq.From.ID, 10), displayName(cq.From)
	}
	if m := cq.Message; m != nil && m.Chat != nil {
		act.Channel = strconv.FormatInt(m.Chat.ID, 10)
		act.Question = core.MessageRef{Channel: act.Channel, ID: strconv.Itoa(m.MessageID)}
	}
	res := h.HandleAction(ctx, act)
	toast := res.Refusal
	if res.Err == nil {
		toast = render(res.Settled).Plain
	}
	p := tgbotapi.Params{"callback_query_id": cq.ID, "text": toast}
	if res.Err != nil {
		p["show_alert"] = "false"
	}
	if _, err := a.do(ctx, "answerCallbackQuery", p); err != nil {
		a.log.Warn("telegram: answer callback query", "method", "answerCallbackQuery", "err", err)
	}
	if res.Err == nil && act.Question.ID != "" {
		if err := a.Settle(ctx, act.Question, res.Settled); err != nil {
			a.log.Warn("telegram: settle question", "method", "editMessageText", "err", err)
		}
	}
}
