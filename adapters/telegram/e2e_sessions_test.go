package telegram

import (
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/internal/bottest"
)

// TestE2ESessionsContinue: /sessions lists a Claude Code session a
// terminal left in the workspace with an inline Continue button; a click
// by someone not allowed gets a refusing toast and changes nothing, the
// allowed user's edits the message to the outcome and the next message
// resumes that session (the agent runs with --resume).
func TestE2ESessionsContinue(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	config := t.TempDir()
	st.agentEnv = map[string]string{"CLAUDE_CONFIG_DIR": config}
	bottest.LayClaudeSession(t, config, st.dir)
	st.up()
	st.s.PushPrivate(ann, "/sessions")
	q := st.waitText(42, "claude-code sessions in")
	if !strings.Contains(q.Text, "db2e0271") || !strings.Contains(q.Text, "2 prompts") || !strings.Contains(q.Text, "first prompt") {
		t.Errorf("/sessions answered %q", q.Text)
	}
	value := "golem:resume:" + bottest.RecordedSession
	var markup string
	for _, c := range st.s.Calls("sendMessage") {
		if strings.Contains(c.Params.Get("text"), "claude-code sessions in") {
			markup = c.Params.Get("reply_markup")
		}
	}
	for _, want := range []string{`"inline_keyboard"`, `"text":"Continue db2e0271"`, `"callback_data":"` + value + `"`} {
		if !strings.Contains(markup, want) {
			t.Fatalf("reply_markup %s lacks %s", markup, want)
		}
	}
	toast := func(id string) string {
		var text string
		st.s.WaitUntil(t, 20*time.Second, "the toast of "+id, func() bool {
			for _, c := range st.s.Calls("answerCallbackQuery") {
				if c.Params.Get("callback_query_id") == id {
					text = c.Params.Get("text")
					return true
				}
			}
			return false
		})
		return text
	}

	stranger := telegramtest.User{ID: 666, FirstName: "Mallory"}
	if got := toast(st.s.PushCallback(42, stranger, int(q.ID), value)); !strings.Contains(got, "not allowed") {
		t.Errorf("the stranger's toast %q", got)
	}
	st.s.PushPrivate(ann, "before")
	st.waitText(42, "echo: before")
	if id, ok := st.invocations()[0].Flag("--resume"); ok {
		t.Errorf("after the stranger's click the agent resumed %s", id)
	}

	if got := toast(st.s.PushCallback(42, ann, int(q.ID), value)); !strings.Contains(got, "now continues session") {
		t.Errorf("Ann's toast %q", got)
	}
	if settled := st.waitText(42, "now continues session db2e0271"); settled.ID != q.ID {
		t.Errorf("the /sessions message was not edited to the outcome: %+v", settled)
	}
	st.s.PushPrivate(ann, "go on")
	st.waitText(42, "echo: go on")
	invs := st.invocations()
	if id, _ := invs[len(invs)-1].Flag("--resume"); id != bottest.RecordedSession {
		t.Errorf("the message after Continue ran with --resume %q, want %s", id, bottest.RecordedSession)
	}
}
