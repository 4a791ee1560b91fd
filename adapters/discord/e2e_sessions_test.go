package discord

import (
	"strings"
	"testing"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/internal/bottest"
)

// TestSessionsContinueButton: /sessions lists a Claude Code session a
// terminal left in the workspace with a Continue button; a click by
// someone not allowed is answered ephemerally and changes nothing, the
// allowed user's updates the message to the outcome and the next /ask
// resumes that session (the agent runs with --resume).
func TestSessionsContinueButton(t *testing.T) {
	config := t.TempDir()
	w := newWorldBot(t, discordtest.Options{}, Options{}, bottest.Options{AgentEnv: map[string]string{"CLAUDE_CONFIG_DIR": config}})
	bottest.LayClaudeSession(t, config, w.golem.Workspace)
	w.fake.Command(discordtest.Slash{Channel: "c1", Guild: "g1", User: "u1", Name: "sessions"})
	value := "golem:resume:" + bottest.RecordedSession
	var q discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.All() {
			if strings.Contains(m.Components, value) {
				q = m
				return true
			}
		}
		return false
	}) {
		t.Fatal("no /sessions answer with a Continue button")
	}
	if !strings.Contains(q.Components, `"label":"Continue db2e0271"`) || !strings.Contains(q.Content, "2 prompts") || !strings.Contains(q.Content, "first prompt") {
		t.Errorf("/sessions answered %q with components %s", q.Content, q.Components)
	}
	click := func(user string) discordtest.Interaction {
		id := w.fake.Click(discordtest.Click{Guild: "g1", Channel: q.ChannelID, Message: q.ID, User: user, CustomID: value})
		var in discordtest.Interaction
		if !w.fake.Wait(wait, func(v discordtest.View) bool { in, _ = v.Interaction(id); return in.Callback != 0 }) {
			t.Fatalf("the click of %s was not answered", user)
		}
		return in
	}
	if in := click("u9"); in.Callback != 4 || in.CallbackFlags&64 == 0 {
		t.Errorf("a stranger's click answered with type %d flags %d, want an ephemeral 4", in.Callback, in.CallbackFlags)
	}
	w.original(t, w.ask("u1", "c1", "before"), "echo: before")
	if id, ok := w.golem.Invocations()[0].Flag("--resume"); ok {
		t.Errorf("after the stranger's click the agent resumed %s", id)
	}

	if in := click("u1"); in.Callback != 7 {
		t.Errorf("the allowed click answered with type %d, want 7 (update the message)", in.Callback)
	}
	var settled discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		settled, _ = v.Message(q.ID)
		return strings.Contains(settled.Content, "now continues session `db2e0271`") && !strings.Contains(settled.Components, "golem:")
	}) {
		t.Fatalf("the /sessions message was not updated to the outcome: %+v", settled)
	}
	w.original(t, w.ask("u1", "c1", "go on"), "echo: go on")
	invs := w.golem.Invocations()
	if id, _ := invs[len(invs)-1].Flag("--resume"); id != bottest.RecordedSession {
		t.Errorf("the /ask after Continue ran with --resume %q, want %s", id, bottest.RecordedSession)
	}
}
