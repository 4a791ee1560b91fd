package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/internal/bottest"
)

// TestE2ESessionsContinue: /sessions lists a Claude Code session a
// terminal left in the workspace, with a Continue button; a click by
// someone not allowed is refused privately and changes nothing, the
// allowed user's settles the message and the next message resumes that
// session (the agent runs with --resume).
func TestE2ESessionsContinue(t *testing.T) {
	config := t.TempDir()
	b := newE2E(t, botConfig{agentEnv: map[string]string{"CLAUDE_CONFIG_DIR": config}})
	bottest.LayClaudeSession(t, config, b.Workspace)
	if _, err := b.fake.SlashCommand("U1", "C1", "/golem", "sessions"); err != nil {
		t.Fatal(err)
	}
	value := "golem:resume:" + bottest.RecordedSession
	var q slacktest.Message
	if !b.fake.Wait(30*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Blocks, value) {
				q = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no /sessions answer with a Continue button; bot messages: %+v", b.fake.BotMessages("C1"))
	}
	for _, want := range []string{`"Continue db2e0271"`, "db2e0271", "2 prompts", "first prompt"} {
		if !strings.Contains(q.Blocks, want) {
			t.Errorf("/sessions' blocks %s lack %s", q.Blocks, want)
		}
	}
	click := func(user string) {
		t.Helper()
		d, err := b.fake.Click(user, "C1", q.ThreadTS, q.TS, value)
		if err != nil {
			t.Fatal(err)
		}
		if !b.fake.Wait(5*time.Second, func() bool { _, ok := b.fake.Acked(d.EnvelopeID); return ok }) {
			t.Fatalf("the click of %s was not acked", user)
		}
	}

	click("U9")
	if !b.fake.Wait(20*time.Second, func() bool { return len(b.fake.Calls("chat.postEphemeral")) == 1 }) {
		t.Fatal("the stranger got no private refusal")
	}
	if c := b.fake.Calls("chat.postEphemeral")[0]; c.Args["user"] != "U9" || !strings.Contains(c.Args["text"], "not allowed") {
		t.Errorf("refusal %+v", c.Args)
	}
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " before"})
	b.answer("C1", d.TS, "echo: before")
	if id, ok := b.Invocations()[0].Flag("--resume"); ok {
		t.Errorf("after the stranger's click the agent resumed %s", id)
	}

	click("U1")
	if !b.fake.Wait(20*time.Second, func() bool {
		m, _ := b.fake.Message("C1", q.TS)
		return strings.Contains(m.Text, "now continues session `db2e0271`") && !strings.Contains(m.Blocks, `"actions"`)
	}) {
		m, _ := b.fake.Message("C1", q.TS)
		t.Fatalf("the /sessions message was not settled by the click: %+v", m)
	}
	d = b.say(slacktest.Event{Channel: "C1", Text: mention + " go on"})
	b.answer("C1", d.TS, "echo: go on")
	invs := b.Invocations()
	if id, _ := invs[len(invs)-1].Flag("--resume"); id != bottest.RecordedSession {
		t.Errorf("the message after Continue ran with --resume %q, want %s", id, bottest.RecordedSession)
	}
}
