package telegram

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/internal/bottest"
)

// TestE2EQuestionRepliesToWhatTheAgentSaid: the agent asks right after its
// first text, or before any, in a private chat: the answer is sent first (with that text, or
// the placeholder), the Write call's activity as a reply to it next, and
// the question last, as a reply to the answer (reply_to_message_id). The
// answer's first post is answered 429 once, as a busy chat's may be, so
// the question is ready well before the answer is on the chat.
func TestE2EQuestionRepliesToWhatTheAgentSaid(t *testing.T) {
	for _, tc := range bottest.Asks {
		t.Run(tc.Name, func(t *testing.T) {
			st := newStack(t, telegramtest.Options{})
			st.s.Fail("sendMessage", 1, telegramtest.Failure{Code: 429, Desc: "Too Many Requests: retry after 1", RetryAfter: 1})
			st.up()
			asked := st.s.PushPrivate(ann, tc.Script)
			q := st.waitText(42, "wants to write")
			msgs := st.s.BotMessages(42) // in posting order
			at := slices.IndexFunc(msgs, func(m telegramtest.Message) bool { return m.ID == q.ID })
			answer := msgs[0]
			if at == 0 {
				t.Fatalf("the question %+v was the bot's first message, before the answer", q)
			}
			if q.ReplyTo != answer.ID {
				t.Errorf("the question replies to %d, want the answer %d (the asking message is %d)", q.ReplyTo, answer.ID, asked.MessageID)
			}
			if !slices.ContainsFunc(msgs[:at], func(m telegramtest.Message) bool {
				return m.ReplyTo == answer.ID && strings.Contains(m.Text, "Write")
			}) {
				t.Errorf("the Write call's activity was not sent as a reply to the answer before the question: %+v", msgs[:at])
			}
			if got := textWhenAsked(st.s, answer.ID); !strings.Contains(got, tc.Shown) {
				t.Errorf("the answer read %q when the question was sent, want %q in it", got, tc.Shown)
			}

			var allow string
			for _, c := range st.s.Calls("sendMessage") {
				if m := c.Params.Get("reply_markup"); strings.Contains(m, `"golem:allow:`) {
					i := strings.Index(m, `"golem:allow:`)
					allow = m[i+1 : i+1+len("golem:allow:")+8]
				}
			}
			st.s.PushCallback(42, ann, int(q.ID), allow)
			st.s.WaitUntil(t, 20*time.Second, "the answer ends with the agent's answer after the allow", func() bool {
				for _, m := range st.s.BotMessages(42) {
					if m.ID == answer.ID {
						return strings.HasSuffix(m.Text, "echo: written")
					}
				}
				return false
			})
		})
	}
}

// textWhenAsked is what the answer (message id) read when the question
// (the message with a keyboard) was sent: its own sendMessage, the first,
// and its edits before the question.
func textWhenAsked(s *telegramtest.Server, id int64) string {
	var text string
	for _, c := range s.Calls("") {
		switch {
		case c.Method == "sendMessage" && c.Params.Get("reply_markup") != "":
			return text
		case c.Method == "sendMessage" && text == "" && c.Params.Get("reply_to_message_id") == "":
			text = c.Params.Get("text")
		case c.Method == "editMessageText" && c.Params.Get("message_id") == strconv.FormatInt(id, 10) && !c.Limited:
			text = c.Params.Get("text")
		}
	}
	return text
}
