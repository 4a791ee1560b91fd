package telegram

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
)

// A message while the answer runs goes into it (busy: steer, the default
// with Claude Code): the bot reacts 👀 to it (setMessageReaction), the one
// answer carries what the agent made of it, and no note is sent.
func TestE2EMessageWhileAnsweringSteers(t *testing.T) {
	st := newStack(t, telegramtest.Options{EnforceRates: true})
	st.up()
	st.s.PushPrivate(ann, "!text 20\n!await\nfinal")
	st.waitText(42, "the quick")
	second := st.s.PushPrivate(ann, "also this")
	st.waitText(42, "heard: also thisecho: final")
	st.s.WaitUntil(t, 20*time.Second, "the 👀 reaction", func() bool {
		for _, m := range st.s.Messages(42) {
			if m.ID == second.MessageID {
				return slices.Equal(m.Reactions, []string{"👀"})
			}
		}
		return false
	})
	for _, m := range st.s.BotMessages(42) {
		if strings.Contains(m.Text, "noted") {
			t.Errorf("a note was sent although the message has its reaction: %q", m.Text)
		}
	}
	if n := len(st.invocations()); n != 1 {
		t.Errorf("the agent ran %d times, want once", n)
	}
	if n := st.s.RateLimited(); n != 0 {
		t.Errorf("the fake answered 429 %d times", n)
	}
}

// A reaction Telegram refuses falls back to the short note.
func TestE2ESteerReactionRefusedGetsANote(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.PushPrivate(ann, "!text 20\n!await\nfinal")
	st.waitText(42, "the quick")
	st.s.Fail("setMessageReaction", 1, telegramtest.Failure{Code: 400, Desc: "Bad Request: REACTION_INVALID"})
	st.s.PushPrivate(ann, "also this")
	st.waitText(42, "heard: also thisecho: final")
	st.waitText(42, "noted: added to the answer in progress")
}
